/// How the body of an HTTP/1 request is delimited (RFC 9112 §6.3).
package enum HTTP1BodyFraming: Sendable, Hashable {
    /// No body: neither Content-Length nor Transfer-Encoding was sent.
    case none
    /// Exactly this many bytes follow the head (possibly zero).
    case contentLength(Int64)
    /// The body uses the chunked transfer coding; its length is unknown until the last chunk.
    case chunked
}

/// One step of parsing an HTTP/1 request stream, produced by ``HTTP1RequestParser/next()``.
package enum HTTP1RequestEvent: Sendable, Hashable {
    /// A complete, validated request head and the way its body is framed.
    case head(HTTPRequestHead, HTTP1BodyFraming)
    /// The next bytes of the body (already de-chunked), in order, as soon as they arrived. A body may be split
    /// into any number of these events, depending on how the bytes arrived.
    case body([UInt8])
    /// The request (head and body) is complete. The parser continues with the next pipelined request.
    case end
    /// The stream is malformed. Answer `error.status` and close the connection: the parser returns this error forever.
    case error(HTTP1ParseError)
}
