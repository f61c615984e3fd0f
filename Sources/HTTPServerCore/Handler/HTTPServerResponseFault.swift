import HTTPWire

/// A deliberate failure of a response, for a handler that stands in for a faulty server (the gateway's stub faults):
/// what the client sees instead of an answer. Set as ``HTTPServerResponse/fault``; the response's head and body are
/// then not sent. It acts in the response's turn (after the answers to earlier pipelined requests are queued).
///
/// Over HTTP/1.1 each ends the connection; over HTTP/2 each resets only the request's stream (RST_STREAM with
/// ``http2ErrorCode``), never the connection. A body that stops half-way or arrives slowly needs no fault: a
/// ``HTTPServerResponse/Body/stream(_:)`` body that fails part-way, or yields slowly, does that.
package enum HTTPServerResponseFault: Sendable, Equatable {
    /// HTTP/1.1: the connection is reset (TCP RST: `SO_LINGER` 0, then close) before a byte of the answer.
    /// HTTP/2: RST_STREAM `INTERNAL_ERROR`.
    case reset
    /// HTTP/1.1: the connection is closed (FIN) without a byte of the answer: the client reads end of file.
    /// HTTP/2: RST_STREAM `CANCEL`.
    case close
    /// HTTP/1.1: these bytes (something that is not an HTTP response) are sent as they are, then the connection is
    /// closed. HTTP/2: RST_STREAM `PROTOCOL_ERROR`, what a client answers a malformed response with.
    case raw([UInt8])

    /// The RST_STREAM code an HTTP/2 stream is reset with.
    package var http2ErrorCode: HTTP2ErrorCode {
        switch self {
        case .reset: return .internalError
        case .close: return .cancel
        case .raw: return .protocolError
        }
    }
}
