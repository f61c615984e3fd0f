import HTTPWire
import NetCore

/// Compresses a handler's responses as ``HTTPServer/Configuration/compression`` says, so every handler (HTTP/1.1 and
/// HTTP/2) gets gzip/deflate by configuration. The connections apply it, synchronously, to each answer as it comes
/// back from the handler: a wrapping handler would add an async frame and a task switch to every request.
///
/// - A whole body (`.bytes`) is compressed at once when it is at least `minimumBytes` long; the connection then sends
///   the compressed length as `Content-Length`.
/// - A streamed body is compressed chunk by chunk (see ``StreamingDeflate``) and sent chunked (HTTP/1.1) or as DATA
///   frames (HTTP/2); a declared `Content-Length` below `minimumBytes` keeps it as it is.
/// - The head gets `Content-Encoding`, `Vary: Accept-Encoding` (merged into an existing `Vary`), loses
///   `Content-Length` and has a strong `ETag` weakened, as nginx does (``CompressionPolicy/apply(_:to:)``).
/// - A response that was eligible but not compressed because of the client's `Accept-Encoding` still gets `Vary`.
/// - A HEAD answer gets the head its GET would get, as nginx gives it: `Content-Encoding`, `Vary` and a weak `ETag`,
///   and no `Content-Length` (the compressed length is not known without compressing); nothing is compressed.
///
/// A class: every connection of a loop reads the one compressor for each answer, which a value (its policy and pools)
/// would be copied for.
final class ResponseCompressor: Sendable {
    let policy: CompressionPolicy
    /// Reused zlib streams for whole bodies, one pool per offered coding.
    let pools: [ContentCoding: DeflaterPool]

    init(policy: CompressionPolicy) {
        self.policy = policy
        var pools: [ContentCoding: DeflaterPool] = [:]
        for coding in policy.codings where coding == .gzip || coding == .deflate {
            pools[coding] = DeflaterPool(coding: coding, level: policy.level)
        }
        self.pools = pools
    }

    /// The response as it should be sent to `request`.
    func compress(_ response: consuming HTTPServerResponse, for request: HTTPServerRequest) -> HTTPServerResponse {
        compress(response, for: request.head, on: request.loop)
    }

    /// The response as it should be sent to the request whose head is `request` (a streamed body is compressed on
    /// `loop`), with its other properties (``HTTPServerResponse/requestID``, ``HTTPServerResponse/closesConnection``)
    /// as they were: what a request answered later keeps for its answer, rather than the whole request. Inlined into the
    /// request's form: called out of line, it was handed a copy of the head.
    @inline(__always)
    func compress(_ response: consuming HTTPServerResponse, for request: HTTPRequestHead, on loop: EventLoop)
        -> HTTPServerResponse
    {
        let isHead = request.method == .head
        if response.fault != nil { return response }
        if case .none = response.body, !isHead { return response }
        if case .bytes(let body) = response.body, body.count < policy.minimumBytes { return response }
        var head = response.head
        switch policy.decide(requestMethod: request.method, requestHeaders: request.headers, response: head) {
        case .identity(let vary):
            guard vary else { return response }
            CompressionPolicy.addVary(to: &head)
            return Self.replacing(response, head: head, body: response.body)
        case .compress(let coding):
            // Only codings zlib produces; anything else configured in the policy is sent as identity.
            guard let pool = pools[coding] else { return response }
            if isHead {
                // The fields its GET gets, and no body (a stream is dropped as the connection would drop it).
                policy.apply(coding, to: &head)
                return Self.replacing(response, head: head, body: .none)
            }
            switch response.body {
            case .none:
                return response
            case .bytes(let body):
                guard let compressed = try? pool.compress(body) else { return response }
                policy.apply(coding, to: &head)
                return Self.replacing(response, head: head, body: .bytes(compressed))
            case .stream(let body):
                policy.apply(coding, to: &head)
                let compressed = StreamingDeflate.compress(
                    body, coding: coding, level: policy.level, loop: loop)
                return Self.replacing(response, head: head, body: .stream(compressed))
            }
        }
    }
}

extension ResponseCompressor {
    /// `response` with `head` and `body`, its other properties as they were. Out of line, so that the compressor's
    /// common path (nothing to do) hands the response back without a copy.
    @inline(never)
    fileprivate static func replacing(
        _ response: consuming HTTPServerResponse, head: HTTPResponseHead, body: HTTPServerResponse.Body
    ) -> HTTPServerResponse {
        var replaced = response
        replaced.head = head
        replaced.body = body
        return replaced
    }
}

extension Optional where Wrapped == ResponseCompressor {
    /// `response` as it is sent to `request`: compressed as the server's compressor decides, or as it is without one.
    func applied(to response: consuming HTTPServerResponse, for request: HTTPServerRequest) -> HTTPServerResponse {
        guard let compressor = self else { return response }
        return compressor.compress(response, for: request)
    }
}
