import HTTPWire

/// A complete response from ``HTTPClient/execute(_:deadline:timeout:progress:)``, body collected in memory.
package struct HTTPClientResponse: Sendable {
    package var head: HTTPResponseHead
    package var body: [UInt8]
    package var timings: HTTPClientTimings

    package init(head: HTTPResponseHead, body: [UInt8], timings: HTTPClientTimings) {
        self.head = head
        self.body = body
        self.timings = timings
    }

    package var status: Int { head.status }
    package var headers: HTTPFields { head.headers }
}

/// Where the time of one client request went, for access logs and metrics.
package struct HTTPClientTimings: Sendable, Hashable {
    /// Time spent opening a new connection (TCP and TLS); `nil` when a pooled connection was reused.
    package var connect: Duration?
    /// Time from the start of the request to the first byte of the response head.
    package var firstByte: Duration
    /// Time from the start of the request to the end of the response body.
    package var total: Duration

    package init(connect: Duration? = nil, firstByte: Duration = .zero, total: Duration = .zero) {
        self.connect = connect
        self.firstByte = firstByte
        self.total = total
    }
}

/// Progress callbacks for a request's upload and download; called on the connection's event loop, so keep them short.
package struct HTTPClientProgress: Sendable {
    /// Bytes of the request body sent so far, and the total when known: a byte counts once it is handed to the
    /// socket (HTTP/1.1) or to the stream's flow-control window (HTTP/2). Called in steps (at least 64 KiB, or a
    /// hundredth of a known total) and once at the end with the total (for a stream of unknown length, the length it
    /// turned out to have); never with less than before.
    package var upload: (@Sendable (_ completed: Int64, _ total: Int64?) -> Void)?
    /// Bytes of the response body received so far, and the total when the response declared it.
    package var download: (@Sendable (_ completed: Int64, _ total: Int64?) -> Void)?

    package init(
        upload: (@Sendable (Int64, Int64?) -> Void)? = nil, download: (@Sendable (Int64, Int64?) -> Void)? = nil
    ) {
        self.upload = upload
        self.download = download
    }
}
