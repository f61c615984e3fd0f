import HTTPServerCore
import HTTPWire

/// A plain stub's answers made once, for an upstream where nothing could tell them from the answers Moya's stub
/// pipeline makes: no responder (no `responses`, templates, faults or `seed`), no delay or latency, no exchange logger
/// (the one plugin that reads a stubbed exchange), no token source (which would fetch a token), no credentials of the
/// gateway's own (a stubbed 401 is then the gateway's fault), and statuses the upstream's `validation` accepts. The
/// plugins that stay only add headers to a request that is never sent (forwarding headers), or are never asked
/// (a route's retrier: Moya's stubs are not retried).
///
/// A request answered from it costs its routing and its access-log record: no target, endpoint, plugin pass or
/// `Moya.Response` (see `GatewayHandler.decide`), and no copy of the headers (the request id goes in the response's
/// `requestID`, which the connection writes after them). Its answer is the one the pipeline gives: the
/// stub's status, headers and body, with the request's `X-Request-Id`; an `error_rate` draw answers the stub's
/// `error_status` with the same headers and no body.
final class CannedStubAnswer: Sendable {
    private let status: Int
    private let errorStatus: Int
    /// The stub's headers as the client gets them, all but the request id: the same for both answers.
    private let headers: HTTPFields
    private let body: [UInt8]
    private let sampler: StubLatencySampler

    /// The canned answers of `upstream`'s stub, or nil when Moya's pipeline could answer differently (see the type's
    /// discussion). `headers` are the stub's headers as the client gets them, all but the request id.
    init?(
        upstream: UpstreamConfig, headers: HTTPFields, sampler: StubLatencySampler?, logsExchanges: Bool,
        hasTokenSource: Bool
    ) {
        guard let stub = upstream.stub, let sampler, !StubResponder.isNeeded(for: stub), stub.latency == nil,
            stub.delay <= .zero, !logsExchanges, !hasTokenSource, upstream.accessToken == nil,
            upstream.credentials == nil, upstream.oauth2 == nil,
            Self.accepts(upstream.validation, stub.status),
            stub.errorRate <= 0 || Self.accepts(upstream.validation, stub.errorStatus)
        else { return nil }
        status = stub.status
        errorStatus = stub.errorStatus
        self.headers = headers
        body = stub.body
        self.sampler = sampler
    }

    /// The next answer, with `requestID` as its `X-Request-Id`.
    func response(requestID: String) -> HTTPServerResponse {
        // The id is sent after the shared fields by the connection: the list is not copied to add it.
        if sampler.nextIsError() {
            return HTTPServerResponse(
                head: HTTPResponseHead(status: errorStatus, headers: headers), body: .bytes([]), requestID: requestID)
        }
        return HTTPServerResponse(
            head: HTTPResponseHead(status: status, headers: headers), body: .bytes(body), requestID: requestID)
    }

    /// Whether `validation` lets `status` through as a response (Moya's `ValidationType` for the upstream).
    private static func accepts(_ validation: UpstreamConfig.Validation, _ status: Int) -> Bool {
        switch validation {
        case .none: return true
        case .success: return (200..<300).contains(status)
        case .successAndRedirect: return (200..<400).contains(status)
        }
    }
}
