import HTTPWire
import NetCore

/// A request the server refuses itself, before its handler sees it: a malformed or oversized head, a head that took
/// too long (408), an expectation it cannot meet (417), a declared body over the limit (413). The connection closes
/// after the answer (HTTP/1.1) or the stream ends (HTTP/2).
package struct HTTPServerRejection: Sendable {
    /// The status the server answers with.
    package var status: Int
    /// The request head, when it was read before the request was refused (417, a declared body over the limit).
    package var head: HTTPRequestHead?
    package var remoteAddress: SocketAddress?
    package var isTLS: Bool

    package init(status: Int, head: HTTPRequestHead? = nil, remoteAddress: SocketAddress? = nil, isTLS: Bool = false) {
        self.status = status
        self.head = head
        self.remoteAddress = remoteAddress
        self.isTLS = isTLS
    }

    /// `handler`'s answer to this rejection, with the server's status whatever the handler said.
    func answer(from handler: any HTTPServerHandler) -> HTTPServerResponse {
        var response = handler.rejected(self)
        response.head.replaceStatus(with: status)
        return response
    }

    /// `{"error": CODE}` (``HTTPServerErrorCode``) as JSON: what a handler that does not answer rejections gets.
    package var defaultResponse: HTTPServerResponse {
        HTTPServerResponse(
            status: status, headers: ["Content-Type": "application/json"],
            body: Array("{\"error\":\"\(HTTPServerErrorCode.code(for: status))\"}".utf8))
    }
}
