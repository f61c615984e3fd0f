/// The error codes of the gateway's JSON error bodies, with their statuses.
package enum GatewayErrorCode: String, Sendable, CaseIterable {
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case unauthorized
    case forbidden
    case badRequest = "bad_request"
    case payloadTooLarge = "payload_too_large"
    case tooManyRequests = "too_many_requests"
    case badGateway = "bad_gateway"
    case serviceUnavailable = "service_unavailable"
    case gatewayTimeout = "gateway_timeout"
    /// The gateway could not obtain the credentials it sends the upstream (its OAuth 2.0 token endpoint failed, or
    /// the upstream refused a fresh token): 502, and nothing was sent, or what was sent was refused.
    case upstreamAuthFailed = "upstream_auth_failed"

    package var status: Int {
        switch self {
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .unauthorized: return 401
        case .forbidden: return 403
        case .badRequest: return 400
        case .payloadTooLarge: return 413
        case .tooManyRequests: return 429
        case .badGateway: return 502
        case .serviceUnavailable: return 503
        case .gatewayTimeout: return 504
        case .upstreamAuthFailed: return 502
        }
    }
}

/// `{"error": CODE, "request_id": ID}` bodies, served with `Content-Type: application/json`.
package enum ErrorBody {
    package static let contentType = "application/json"

    /// The JSON text for `code` and `requestID` (escaped; no trailing newline).
    package static func json(_ code: GatewayErrorCode, requestID: String) -> String {
        "{\"error\":\"\(code.rawValue)\",\"request_id\":\"\(escape(requestID))\"}"
    }

    /// The body as bytes.
    package static func bytes(_ code: GatewayErrorCode, requestID: String) -> [UInt8] {
        let id = escape(requestID).utf8
        var bytes: [UInt8] = []
        bytes.reserveCapacity(40 + code.rawValue.utf8.count + id.count)
        bytes.append(contentsOf: #"{"error":""#.utf8)
        bytes.append(contentsOf: code.rawValue.utf8)
        bytes.append(contentsOf: #"","request_id":""#.utf8)
        bytes.append(contentsOf: id)
        bytes.append(contentsOf: #""}"#.utf8)
        return bytes
    }

    /// JSON string escaping (RFC 8259): quotes, backslash, controls as `\uXXXX` or short forms; U+2028/2029 escaped too.
    /// Text with nothing to escape (request ids, most log fields) is returned as it is, without a copy.
    package static func escape(_ text: String) -> String {
        let mayNeed = text.utf8.withContiguousStorageIfAvailable { bytes in bytes.contains(where: mayNeedEscaping) }
        guard mayNeed ?? text.utf8.contains(where: mayNeedEscaping) else { return text }
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16, uppercase: false)
                    output += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output
    }

    /// Whether a UTF-8 byte may belong to something `escape` rewrites (0xE2 leads U+2028 and U+2029).
    private static func mayNeedEscaping(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F || byte == 0xE2
    }
}
