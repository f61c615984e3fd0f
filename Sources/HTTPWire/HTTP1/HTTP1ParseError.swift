/// Why an HTTP/1.x message could not be parsed.
///
/// A parse error is final: the byte stream can no longer be framed reliably, so the caller must close the
/// connection after answering (a server answers `status` with `Connection: close`; a client discards the upstream
/// connection and answers its own client with 502). Parsers keep returning the same error once one occurred.
package struct HTTP1ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status a server should answer with: 400, 413, 414, 431, 501 or 505.
    /// For responses parsed by a client it is 502 and only informative.
    package var status: Int
    /// A short human-readable explanation, suitable for logs (never echo it with peer bytes unescaped).
    package var reason: String

    package init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    package var description: String { "\(status) \(reason)" }

    static func badRequest(_ reason: String) -> HTTP1ParseError { HTTP1ParseError(status: 400, reason: reason) }
}
