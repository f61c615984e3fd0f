/// A request as a server session received it (``HTTP2Event/request(streamID:head:endStream:)``), in the form an
/// HTTP/1.1 handler reads, built once while its fields arrived (``HTTP2RequestBuilder``):
///
/// - the target is `:path` (the authority for a CONNECT);
/// - exactly one `Host`, first, from `:authority` (or from the `host` field when there is no `:authority`);
/// - every `cookie` field is joined with `"; "` into one (RFC 9113 §8.2.3);
/// - pseudo-headers, `host` and `te` are not among the fields (connection-specific fields refuse the request);
/// - the version is ``HTTPVersion/http2``.
///
/// Every name, value, the method, the target and the host were checked as RFC 9113 §8.2–8.3 asks, so the head can be
/// written as an HTTP/1.1 request without injecting a line.
package struct HTTP2ReceivedRequest: Sendable, Hashable {
    package var head: HTTPRequestHead
    /// `:protocol` of an extended CONNECT (RFC 8441), if any.
    package var extendedProtocol: String?
    /// The `content-length` the request declared (every one the same digits, checked as it arrived), if any: read once
    /// here, not looked up in ``head`` again by the session and the server.
    package var contentLength: Int64?

    package init(head: consuming HTTPRequestHead, extendedProtocol: String? = nil, contentLength: Int64? = nil) {
        self.head = head
        self.extendedProtocol = extendedProtocol
        self.contentLength = contentLength
    }

    /// The head, the protocol and the declared length, handed over whole: the head is moved out (a stored property
    /// read off a consumed value is copied, and the value destroyed after).
    package consuming func parts() -> (head: HTTPRequestHead, extendedProtocol: String?, contentLength: Int64?) {
        var moved = HTTPRequestHead(method: .get, target: "")
        swap(&moved, &head)
        return (moved, extendedProtocol, contentLength)
    }
}
