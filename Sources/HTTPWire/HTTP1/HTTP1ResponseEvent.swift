/// How the body of an HTTP/1 response is delimited (RFC 9112 §6.3).
package enum HTTP1ResponseBodyFraming: Sendable, Hashable {
    /// No body: a response to HEAD, a 204 or a 304 (whatever its headers claim), or Content-Length 0 is reported
    /// as `.contentLength(0)`.
    case none
    /// Exactly this many bytes follow the head.
    case contentLength(Int64)
    /// The body uses the chunked transfer coding.
    case chunked
    /// No length was given: the body ends when the server closes the connection, which therefore cannot be reused.
    case untilClose
}

/// One step of parsing an upstream's HTTP/1 response, produced by ``HTTP1ResponseParser/next()``.
package enum HTTP1ResponseEvent: Sendable, Hashable {
    /// An interim 1xx response (100 Continue, 102, 103 Early Hints). The final response follows.
    case informational(HTTPResponseHead)
    /// The validated head of the final response and the way its body is framed.
    case head(HTTPResponseHead, HTTP1ResponseBodyFraming)
    /// The next bytes of the body (already de-chunked), as soon as they arrived, in any number of pieces.
    case body([UInt8])
    /// The response is complete.
    case end
    /// The response is malformed or was cut short. Discard the connection and answer 502 (the parser keeps
    /// returning this error).
    case error(HTTP1ParseError)
}
