import NetCore

/// Limits and timeouts the HTTP server enforces on every connection.
package struct HTTPServerLimits: Sendable, Equatable {
    /// Longest request line accepted; longer gets 414.
    package var maxRequestLineBytes: Int = 8 * 1024
    /// Largest header section accepted; larger gets 431.
    package var maxHeaderBytes: Int = 16 * 1024
    /// Most header fields accepted; more gets 431.
    package var maxHeaders: Int = 100
    /// Largest request body accepted; larger gets 413 before the body is read.
    package var maxBodyBytes: Int64 = 10 * 1024 * 1024
    /// Total time allowed to receive a request head (slowloris); then 408 and close.
    package var headerTimeout: Duration = .seconds(10)
    /// Longest pause while receiving a body; then 408 and close.
    package var bodyTimeout: Duration = .seconds(30)
    /// How long an idle keep-alive connection stays open.
    package var idleTimeout: Duration = .seconds(60)
    /// Longest time without write progress to a slow reader; then close.
    package var sendTimeout: Duration = .seconds(60)
    /// Most requests read ahead of their responses on one pipelined connection.
    package var maxPipelinedRequests: Int = 16
    /// Most connections open at once across the server.
    package var maxConnections: Int = 10_000
    /// Most requests served on one connection before it is closed: HTTP/1.1 requests (the last is answered with
    /// `Connection: close`), and HTTP/2 streams (a graceful GOAWAY after the last; the lower of this and
    /// ``HTTPWire/HTTP2Settings/maxRequestsPerConnection`` applies, taken when the connection opens). `Int.max`: no
    /// limit.
    package var maxRequestsPerConnection: Int = 1_000
    /// Whether a client that closes its side of the connection (EOF) while its requests are still being handled
    /// abandons them: their handlers are cancelled and the connection closed, unanswered (nginx's default for proxied
    /// requests, where the cancelled handler's upstream call is aborted too). Off, the server answers them first, as
    /// HTTP/1.1 allows a client that half-closes after sending. An HTTP/1 response already being written is finished
    /// either way, and a request whose body the EOF cut short is still answered (its handler sees the body fail).
    package var abandonsRequestsOnClientEOF: Bool = false
    /// Slowest pace, in bytes per second, at which a client may take a response while the server has bytes queued for
    /// it: on HTTP/1.1 in its socket's queue (the kernel's buffer is full), on HTTP/2 in the socket's queue or behind a
    /// flow-control window the client holds shut (a stream's, or the connection's). Only that time counts, so a slow
    /// upstream, a long poll or server-sent events never fall short; a reader that trickles (opens its window a byte at
    /// a time) does, not only a silent one. Falling ``minRateWindow`` behind it cuts the client: an HTTP/1.1
    /// connection is reset, an HTTP/2 stream reset (CANCEL), a held HTTP/2 connection window ends the connection with
    /// GOAWAY(ENHANCE_YOUR_CALM). 0 disables (``sendTimeout`` still cuts a reader that takes nothing).
    package var minSendRate: Int64 = 1024
    /// Slowest pace, in bytes per second, at which a client may send a request body while the server is ready to read
    /// it (not while it waits for its handler to take what came): falling ``minRateWindow`` behind it gets 408 (an
    /// HTTP/2 stream: 408, then RST_STREAM NO_ERROR), or a close when the request was already answered. 0 disables
    /// (``bodyTimeout`` still cuts a body that stops).
    package var minReceiveRate: Int64 = 1024
    /// How far behind ``minSendRate`` and ``minReceiveRate`` a transfer may fall (as Apache's `mod_reqtimeout` grants
    /// a first allowance and one second more per `MinRate` bytes): time spent waiting on the client adds up, each byte
    /// moved pays 1/rate seconds back, and a shortfall past this window cuts. A client that moves nothing for this long
    /// is cut too; a transfer whose queue empties (the client caught up) starts again from nothing.
    package var minRateWindow: Duration = .seconds(10)
    /// How a connection closed with its client possibly still sending (a refused request, a body that failed or was
    /// being dropped) keeps reading and dropping input after its last answer, so that closing with unread bytes does
    /// not reset the connection under the answer (see ``NetCore/Connection/closeAfterFlush(lingering:)``).
    package var lingeringClose = LingeringClose()

    package init() {}
}
