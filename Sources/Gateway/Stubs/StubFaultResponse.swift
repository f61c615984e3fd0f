import HTTPServerCore
import HTTPWire
import NetCore

/// A stub fault acted out on the client's connection (`mode: client`), as WireMock's faults act on their caller:
/// the answer the stub drew is cut, slowed or replaced, and over HTTP/2 only the request's stream suffers.
///
/// | fault | HTTP/1.1 | HTTP/2 |
/// |---|---|---|
/// | `connection_reset` | TCP reset before any byte | RST_STREAM `INTERNAL_ERROR` |
/// | `empty_response` | connection closed without a byte | RST_STREAM `CANCEL` |
/// | `malformed_response` | a status line that is not HTTP, then close | RST_STREAM `PROTOCOL_ERROR` |
/// | `truncated_body` | the head (its `Content-Length` the whole body's) and half the body, then close | the head, half the body, RST_STREAM `INTERNAL_ERROR` |
/// | `slow_body` | the head, then the body in pieces spread over `duration` | the same as DATA |
enum StubFaultResponse {
    /// The status logged for a fault that sends no answer (nginx's "closed without response").
    static let noResponseStatus = 444

    /// How long a truncated body's first half is left to reach the client before the rest is cut off.
    static let truncationPause = Duration.milliseconds(50)

    /// What the malformed response sends: not a status line any client accepts.
    static let malformedBytes = Array(
        "HTTP/1.1 ??? moya-gateway stub: malformed response\r\nContent-Length: x\r\n\r\n".utf8)

    /// `response` (the stub's answer, a body of bytes) with `fault` acted out. `loop`: the request's, which paces a
    /// slow body.
    static func applying(
        _ fault: StubFaultConfig, to response: HTTPServerResponse, isHead: Bool,
        loop: EventLoop
    ) -> HTTPServerResponse {
        let body: [UInt8]
        if case .bytes(let bytes) = response.body { body = bytes } else { body = [] }
        switch fault.kind {
        case .connectionReset:
            return failing(.reset)
        case .emptyResponse:
            return failing(.close)
        case .malformedResponse:
            return failing(.raw(malformedBytes))
        case .truncatedBody:
            // The head promises the whole body (at least one byte, so even an empty body comes up short).
            var head = response.head
            head.headers.replaceOrAdd(name: "Content-Length", value: String(max(body.count, 1)))
            guard !isHead else { return HTTPServerResponse(head: head, body: .none) }
            let stream = ByteStream()
            stream.yield(Array(body.prefix(body.count / 2)))
            // Cut a moment later, as a server dying mid-body would: over HTTP/2 a reset queued with the data would
            // drop the data (RST_STREAM discards the stream's unsent frames).
            Task(executorPreference: loop) { [weak stream] in
                try? await Task.sleep(for: truncationPause)
                stream?.fail(ByteStreamError.aborted)
            }
            return HTTPServerResponse(head: head, body: .stream(stream))
        case .slowBody:
            var head = response.head
            head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
            guard !isHead, !body.isEmpty else { return response }
            return HTTPServerResponse(
                head: head, body: .stream(dribble(body, over: fault.duration ?? .seconds(1), loop: loop)))
        }
    }

    private static func failing(_ fault: HTTPServerResponseFault) -> HTTPServerResponse {
        var response = HTTPServerResponse(head: HTTPResponseHead(status: noResponseStatus))
        response.fault = fault
        return response
    }

    /// `body` in pieces, the last at the end of `duration`: at most one piece per 50 ms, at most one per byte.
    static func dribble(_ body: [UInt8], over duration: Duration, loop: EventLoop) -> ByteStream {
        let pieces = max(1, min(body.count, Int(duration.seconds / 0.05)))
        let interval = duration / pieces
        let stream = ByteStream()
        Task(executorPreference: loop) { [weak stream] in
            for piece in 0..<pieces {
                try? await Task.sleep(for: interval)
                guard let stream else { return }
                let start = body.count * piece / pieces
                let end = body.count * (piece + 1) / pieces
                stream.yield(Array(body[start..<end]))
            }
            stream?.finish()
        }
        return stream
    }
}
