/// Size and count limits applied by ``HTTP1RequestParser``.
package struct HTTP1ParserLimits: Sendable, Hashable {
    /// The longest request line accepted, excluding its CRLF. Longer lines are answered with 414, as soon as more
    /// than `maxRequestLineBytes + 1` bytes (the line and a possible CR) are buffered without an LF.
    package var maxRequestLineBytes: Int
    /// The largest header section accepted (every field line with its CRLF, plus the final empty line).
    /// Larger sections are answered with 431. Also bounds a chunked body's trailer section.
    package var maxHeaderBytes: Int
    /// The most header fields accepted. More are answered with 431. Also bounds the trailer fields.
    package var maxHeaders: Int
    /// The largest body accepted, whether framed by Content-Length or chunked. Larger bodies are answered with 413.
    package var maxBodyBytes: Int64

    package init(
        maxRequestLineBytes: Int = 8192,
        maxHeaderBytes: Int = 16384,
        maxHeaders: Int = 100,
        maxBodyBytes: Int64 = 10 * 1024 * 1024
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaders = maxHeaders
        self.maxBodyBytes = maxBodyBytes
    }
}
