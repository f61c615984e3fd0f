import NetCore

/// Limits and timeouts the HTTP server enforces on every connection.
public struct HTTPServerLimits: Sendable {
    /// Longest request line accepted; longer gets 414.
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Largest header section accepted; larger gets 431.
    public var maxHeaderBytes: Int = 16 * 1024
    /// Most header fields accepted; more gets 431.
    public var maxHeaders: Int = 100
    /// Largest request body accepted; larger gets 413 before the body is read.
    public var maxBodyBytes: Int64 = 10 * 1024 * 1024
    /// Total time allowed to receive a request head (slowloris); then 408 and close.
    public var headerTimeout: Duration = .seconds(10)
    /// Longest pause while receiving a body; then 408 and close.
    public var bodyTimeout: Duration = .seconds(30)
    /// How long an idle keep-alive connection stays open.
    public var idleTimeout: Duration = .seconds(60)
    /// Longest time without write progress to a slow reader; then close.
    public var sendTimeout: Duration = .seconds(60)
    /// Most requests read ahead of their responses on one pipelined connection.
    public var maxPipelinedRequests: Int = 16
    /// Most connections open at once across the server.
    public var maxConnections: Int = 10_000
    /// Most requests served on one connection before it is closed: HTTP/1.1 requests (the last is answered with
    /// `Connection: close`), and HTTP/2 streams (a graceful GOAWAY after the last; the lower of this and
    /// ``HTTPWire/HTTP2Settings/maxRequestsPerConnection`` applies, taken when the connection opens). `Int.max`: no
    /// limit.
    public var maxRequestsPerConnection: Int = 1_000
    /// Whether a client that closes its side of the connection (EOF) while its requests are still being handled
    /// abandons them: their handlers are cancelled and the connection closed, unanswered (nginx's default for proxied
    /// requests, where the cancelled handler's upstream call is aborted too). Off, the server answers them first, as
    /// HTTP/1.1 allows a client that half-closes after sending. An HTTP/1 response already being written is finished
    /// either way, and a request whose body the EOF cut short is still answered (its handler sees the body fail).
    public var abandonsRequestsOnClientEOF: Bool = false
    /// How a connection closed with its client possibly still sending (a refused request, a body that failed or was
    /// being dropped) keeps reading and dropping input after its last answer, so that closing with unread bytes does
    /// not reset the connection under the answer (see ``NetCore/Connection/closeAfterFlush(lingering:)``).
    public var lingeringClose = LingeringClose()

    public init() {}
}
