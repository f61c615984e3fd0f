import HTTPWire

/// A request for ``HTTPClient``: where to send it, the head and the body.
package struct HTTPClientRequest: Sendable {
    /// How the request body is supplied.
    ///
    /// The cases that carry more than one reference are indirect (boxed), so that a body is copied and destroyed as a
    /// single reference: a request is copied several times on its way to a connection, and a multi-word payload made
    /// every copy go through the runtime's generic enum witnesses.
    ///
    /// `.file` and `.stream` bodies are sent as they are produced, with back-pressure: the next chunk is taken only
    /// once the connection's write queue (HTTP/1.1) or the stream's send queue, held back by the server's flow-control
    /// windows (HTTP/2), has room: about 256 KiB and one chunk (the producer picks its size) wait in memory per request,
    /// whatever the body's size.
    /// If the server answers before the body is sent (a refusal such as 413, or a complete response), the rest is not
    /// sent, and an HTTP/1.1 connection whose body was cut short is closed, never reused.
    package enum Body: Sendable {
        /// No body.
        case none
        /// A body held in memory, sent with the head in one write.
        case bytes([UInt8])
        /// A body read from a file in chunks off the event loop, sent with the file's size (at opening) as
        /// `Content-Length`. It can be sent again from its start, so it is retried like `.bytes`.
        indirect case file(path: String)
        /// A body produced by an async sequence of chunks, pulled one chunk at a time (off the event loop) as the
        /// connection has room. `length` is sent as `Content-Length` when known, and a stream that then produces
        /// more or fewer bytes fails the request with ``HTTPClientError/requestBodyFailed(reason:)``; otherwise the
        /// body is sent chunked (HTTP/1.1) or ended with END_STREAM (HTTP/2). A stream that throws fails the request
        /// the same way. Once pulled from, a stream cannot be replayed: such a request is never retried, and when it
        /// is stopped (early response, failure, cancellation) the stream's iteration is cancelled.
        indirect case stream(AsyncThrowingStream<[UInt8], any Error>, length: Int64?)
        /// No body, and a request to switch protocols (its `Upgrade` and `Connection: Upgrade` fields are the
        /// caller's, e.g. a WebSocket handshake). When the server answers `101 Switching Protocols`, the connection
        /// is the new protocol's:
        /// - the stream's bytes are sent on it as they are, with back-pressure (pulled by a task on the connection's
        ///   event loop: the stream must not block);
        /// - the response's body is every byte the server sends after its head, until it closes (streamed; collected
        ///   by `execute(_:)`, up to ``HTTPClient/Configuration/maxResponseBodyBytes``);
        /// - when the stream ends, the connection is closed after what was queued is sent; it is never reused;
        /// - the request deadline bounds only the wait for the head; after the 101, `idleTimeout` (nil: the client's
        ///   response timeout) is the longest time with no bytes either way.
        ///
        /// A 101 naming a protocol the request's `Upgrade` did not offer fails with
        /// ``HTTPClientError/malformedResponse(reason:)``. Any other answer is an ordinary response, and the stream is
        /// never pulled. HTTP/1.1 only: fails with ``HTTPClientError/upgradeRequiresHTTP1`` when the client may speak
        /// HTTP/2 to the origin (``HTTPClient/Configuration/http2`` other than `.never`, on TLS or with `.always`).
        indirect case upgrade(AsyncThrowingStream<[UInt8], any Error>, idleTimeout: Duration? = nil)
    }

    /// Where the request goes; pools are kept per origin. Stored, so that its `Host` header value and hash are not
    /// rebuilt for every send.
    package private(set) var origin: HTTPOrigin
    /// `http` or `https`.
    package var scheme: String {
        get { origin.scheme }
        set { origin.scheme = newValue }
    }
    package var host: String {
        get { origin.host }
        set { origin.host = newValue }
    }
    package var port: Int {
        get { origin.port }
        set { origin.port = newValue }
    }
    /// Origin-form target: path and optional query, starting with `/`.
    package var target: String
    package var method: HTTPMethod
    package var headers: HTTPFields
    package var body: Body
    /// Who the request is sent for (a hash of a client address or an API client's name, say), for the fair share of a
    /// full pool (``HTTPClient/Configuration/maxShare``); nil: nobody in particular, never held back.
    package var callerKey: Int?

    package init(
        method: HTTPMethod = .get, scheme: String, host: String, port: Int? = nil, target: String,
        headers: HTTPFields = HTTPFields(), body: Body = .none
    ) {
        self.method = method
        let scheme = scheme.lowercased()
        self.origin = HTTPOrigin(scheme: scheme, host: host, port: port ?? (scheme == "https" ? 443 : 80))
        self.target = target.isEmpty ? "/" : target
        self.headers = headers
        self.body = body
    }

    /// Creates a request for an origin already known (no URL to split, no `Host` value to build).
    /// - Parameter target: origin-form path and optional query, starting with `/`.
    package init(
        method: HTTPMethod = .get, origin: HTTPOrigin, target: String, headers: HTTPFields = HTTPFields(),
        body: Body = .none
    ) {
        self.method = method
        self.origin = origin
        self.target = target.isEmpty ? "/" : target
        self.headers = headers
        self.body = body
    }

    /// Moves the request out, leaving a vacant one in its place (no origin, target `/`, no fields, no body): for an
    /// owner that keeps the request inside a larger value and hands it on, where a copy would retain each part.
    package mutating func take() -> HTTPClientRequest {
        var taken = HTTPClientRequest(origin: .vacant, target: "/")
        swap(&self, &taken)
        return taken
    }

    /// Creates a request from an absolute `http`/`https` URL string.
    /// - Throws: ``HTTPClientError/invalidURL(_:)`` when the URL is not an absolute http(s) URL with a host.
    package init(method: HTTPMethod = .get, url: String, headers: HTTPFields = HTTPFields(), body: Body = .none) throws
    {
        let parsed = try HTTPURL(parsing: url)
        self.init(
            method: method, scheme: parsed.scheme, host: parsed.host, port: parsed.port, target: parsed.target,
            headers: headers, body: body)
    }
}

/// The scheme, host and port a connection pool serves.
package struct HTTPOrigin: Sendable, Hashable, CustomStringConvertible {
    /// The origin's parts and what is derived from them, made once: a request copies the origin it was made for with
    /// one reference (not three strings), and a pool recognises its own origin by that reference before comparing.
    private final class Parts: Sendable {
        let scheme: String
        let host: String
        let port: Int
        let hostHeader: String
        let isTLS: Bool

        init(scheme: String, host: String, port: Int) {
            self.scheme = scheme
            self.host = host
            self.port = port
            isTLS = scheme == "https"
            let bracketed = host.utf8.contains(UInt8(ascii: ":")) ? "[" + host + "]" : host
            hostHeader = port == (isTLS ? 443 : 80) ? bracketed : bracketed + ":" + String(port)
        }
    }

    private var parts: Parts

    package var scheme: String {
        get { parts.scheme }
        set { parts = Parts(scheme: newValue, host: parts.host, port: parts.port) }
    }
    package var host: String {
        get { parts.host }
        set { parts = Parts(scheme: parts.scheme, host: newValue, port: parts.port) }
    }
    package var port: Int {
        get { parts.port }
        set { parts = Parts(scheme: parts.scheme, host: parts.host, port: newValue) }
    }
    /// The `Host` header value for this origin (port omitted when it is the scheme's default).
    package var hostHeader: String { parts.hostHeader }
    /// Whether the scheme is `https`: stored with the `Host` value, not compared for every request.
    package var isTLS: Bool { parts.isTLS }

    package init(scheme: String, host: String, port: Int) {
        parts = Parts(scheme: scheme, host: host, port: port)
    }

    /// No origin: what a request moved out of (``HTTPClientRequest/take()``) is left with.
    package static let vacant = HTTPOrigin(scheme: "", host: "", port: 0)

    package static func == (lhs: HTTPOrigin, rhs: HTTPOrigin) -> Bool {
        lhs.parts === rhs.parts
            || (lhs.port == rhs.port && lhs.host == rhs.host && lhs.scheme == rhs.scheme)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(scheme)
        hasher.combine(host)
        hasher.combine(port)
    }

    package var description: String { "\(scheme)://\(hostHeader)" }
}
