import HTTPWire
import Locking
import NetCore

/// A response from ``HTTPClient/execute(streaming:deadline:timeout:progress:)``: the head as soon as it arrived, and the body
/// as a back-pressured ``ByteStream`` of the bytes as they come (no decompression, no size cap).
///
/// Read `body` to the end (or until it throws) to give the connection back. While the body is not read, the client
/// stops reading from the connection (HTTP/1.1) or stops opening the stream's flow-control window (HTTP/2), so a slow
/// reader slows the server down instead of filling memory. ``cancel()``, or dropping the response before the body
/// ended, aborts the body: the HTTP/1.1 connection is closed, the HTTP/2 stream reset with CANCEL. The response keeps
/// its ``HTTPClient`` alive: releasing the client does not cut a body being read.
package final class HTTPClientStreamingResponse: Sendable {
    package let head: HTTPResponseHead
    package let body: ByteStream
    /// Connect and first-byte times (`total` is the time to the head).
    package let timings: HTTPClientTimings
    private let abort: @Sendable () -> Void
    /// The client that sent the request: the response keeps it (and so its connection) alive until it is dropped, so
    /// a caller that releases the client while reading the body still gets all of it.
    private let client: (any Sendable)?

    init(
        head: HTTPResponseHead, body: ByteStream, timings: HTTPClientTimings, client: AnyObject?,
        abort: @escaping @Sendable () -> Void
    ) {
        self.client = client.map { UncheckedSendable($0) }
        self.head = head
        self.body = body
        self.timings = timings
        self.abort = abort
    }

    package var status: Int { head.status }
    package var headers: HTTPFields { head.headers }

    /// Stops receiving the body; the body stream ends with ``HTTPClientError/cancelled``. Does nothing once the body
    /// has ended.
    package func cancel() { abort() }

    deinit { abort() }
}

/// What ``HTTPClient/execute(_:streamingBodiesLongerThan:deadline:timeout:progress:)`` returns: the whole response, or its head
/// with the body still arriving.
package enum HTTPClientResponseOrStream: Sendable {
    case collected(HTTPClientResponse)
    case streamed(HTTPClientStreamingResponse)

    /// The response's status code.
    package var status: Int {
        switch self {
        case .collected(let response): response.head.status
        case .streamed(let response): response.head.status
        }
    }
}
