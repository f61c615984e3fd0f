import HTTPServer
import HTTPWire
import NetCore
import Synchronization

/// The client's side of a WebSocket relayed by a `websocket: true` route: the bytes the client sends after the
/// upstream's 101 (the server's ``HTTPServer/HTTPServerRequest/upgradeInput``), handed to the upstream connection as
/// they arrive, with back-pressure, and counted for the access log. No `max_body_bytes` applies: a tunnel is not a
/// body.
///
/// The handshake itself is an ordinary request through the upstream's Moya provider, so the access-token and
/// credential plugins, forwarding headers and request id apply to it like to any other call.
final class WebSocketTunnel: Sendable {
    private let source: ByteStream
    private let relayed = Atomic<Int>(0)
    /// The route's `websocket.idle_timeout`; nil leaves the upstream's `timeout.response`.
    let idleTimeout: Duration?

    private init(source: ByteStream, idleTimeout: Duration?) {
        self.source = source
        self.idleTimeout = idleTimeout
    }

    /// The tunnel for `request` when it is a WebSocket handshake the route relays: an HTTP/1.1 request asking to
    /// upgrade to `websocket` on a route with `websocket: true` to an upstream that can take one. Nil for anything
    /// else, whose `Upgrade` is not forwarded (reliability.md H1-39).
    static func opening(_ request: borrowing HTTPServerRequest, route: RouteConfig,
                        upstream: UpstreamProvider) -> WebSocketTunnel? {
        guard route.websocket, upstream.tunnelProvider != nil, let input = request.upgradeInput,
              request.head.requestsUpgrade(to: "websocket") else { return nil }
        return WebSocketTunnel(source: input, idleTimeout: route.websocketIdleTimeout)
    }

    /// The fields that turn the upstream request into the handshake (the client's own were dropped as hop-by-hop).
    static let upstreamFields: HTTPHeaders = ["Connection": "Upgrade", "Upgrade": "websocket"]

    /// The client's bytes for the upstream connection, pulled as it has room for them.
    func makeStream() -> AsyncThrowingStream<[UInt8], any Error> {
        AsyncThrowingStream(unfolding: { [self] in
            guard let chunk = try await source.next() else { return nil }
            relayed.add(chunk.count, ordering: .relaxed)
            return chunk
        })
    }

    /// The client's bytes relayed so far.
    var bytesRelayed: Int { relayed.load(ordering: .relaxed) }
}
