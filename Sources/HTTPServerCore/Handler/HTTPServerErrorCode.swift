/// The JSON `error` codes the server uses for responses it makes itself.
package enum HTTPServerErrorCode {
    /// The error code for `status`, as in `{"error": "payload_too_large"}`.
    package static func code(for status: Int) -> String {
        switch status {
        case 400: return "bad_request"
        case 401: return "unauthorized"
        case 403: return "forbidden"
        case 404: return "not_found"
        case 405: return "method_not_allowed"
        case 408: return "request_timeout"
        case 413: return "payload_too_large"
        case 414: return "uri_too_long"
        case 417: return "expectation_failed"
        case 431: return "request_header_fields_too_large"
        case 501: return "not_implemented"
        case 502: return "bad_gateway"
        case 503: return "service_unavailable"
        case 504: return "gateway_timeout"
        case 505: return "http_version_not_supported"
        default: return status >= 500 ? "internal_error" : "bad_request"
        }
    }
}
