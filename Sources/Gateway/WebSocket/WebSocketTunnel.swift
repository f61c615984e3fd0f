import Foundation
import HTTPServerCore
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
    let source: ByteStream
    private let relayed = Atomic<Int>(0)
    /// Where the two directions' frames end, and the drain's Close handshake (see ``goAway()``).
    let closing = Mutex(TunnelClosing())
    /// The gateway's open tunnels, which this one joins once it is open (see ``attach(client:)``).
    let registry: OpenTunnels?
    /// The route's `websocket.idle_timeout`; nil leaves the upstream's `timeout.response`.
    let idleTimeout: Duration?
    /// The fields that turn the upstream request into the handshake (the client's own were dropped as hop-by-hop).
    let upstreamFields: HTTPFields
    /// The `Sec-WebSocket-Key` the upstream is sent: the client's, or over HTTP/2 the gateway's own.
    private let key: String?

    /// A tunnel relaying the client's bytes in `source` (``opening(_:route:upstream:registry:)`` makes it for a
    /// handshake).
    init(
        source: ByteStream, idleTimeout: Duration?, upstreamFields: HTTPFields, key: String?,
        registry: OpenTunnels?
    ) {
        self.source = source
        self.registry = registry
        self.idleTimeout = idleTimeout
        self.upstreamFields = upstreamFields
        self.key = key
    }

    /// The tunnel for `request` when it is a WebSocket handshake the route relays: a request asking to upgrade to
    /// `websocket` (an HTTP/1.1 handshake, or an HTTP/2 extended CONNECT, which the server presents as one) on a
    /// route with `websocket: true` to an upstream that can take one. Nil for anything else, whose `Upgrade` is not
    /// forwarded (docs/reliability.md H1-39).
    static func opening(
        _ request: borrowing HTTPServerRequest, route: CompiledRoute, upstream: UpstreamProvider,
        registry: OpenTunnels? = nil
    ) -> WebSocketTunnel? {
        guard relays(request, route: route, upstream: upstream), let input = request.upgradeInput else { return nil }
        var fields: HTTPFields = ["Connection": "Upgrade", "Upgrade": "websocket"]
        var key = request.head.headers.first(name: "Sec-WebSocket-Key")
        if request.head.version == .http2 {
            // RFC 8441 has no key: the upstream's HTTP/1.1 handshake needs one (RFC 6455 §4.1), and its accept value
            // is for the gateway, which does not pass it on over HTTP/2.
            let generated = newKey()
            fields.add(name: "Sec-WebSocket-Key", value: generated)
            key = generated
        }
        return WebSocketTunnel(
            source: input, idleTimeout: route.config.websocketIdleTimeout, upstreamFields: fields, key: key,
            registry: registry)
    }

    /// Whether an upstream's 101 carries the `Sec-WebSocket-Accept` its key calls for (RFC 6455 §4.2.2): one that does
    /// not has not understood the handshake (or answered another one), and the tunnel is not opened. A client that
    /// sent no key is the upstream's to refuse, and is not checked here.
    func isAccepted(by headers: HTTPFields) -> Bool {
        guard let key else { return true }
        guard let accept = headers.first(name: "Sec-WebSocket-Accept") else { return false }
        return accept == Self.acceptValue(for: key)
    }

    /// `base64(SHA-1(key + 258EAFA5-E914-47DA-95CA-C5AB0DC85B11))`.
    static func acceptValue(for key: String) -> String {
        Data(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    /// Whether `request` is an HTTP/2 extended CONNECT (RFC 8441) that `route` cannot relay: it must be refused, since
    /// the plain GET an HTTP/1.1 client's `Upgrade` falls back to would tell this client its tunnel is open.
    static func isRefusedExtendedConnect(
        _ request: borrowing HTTPServerRequest, route: CompiledRoute,
        upstream: UpstreamProvider?
    ) -> Bool {
        guard request.head.version == .http2, request.upgradeInput != nil else { return false }
        return !relays(request, route: route, upstream: upstream)
    }

    /// Whether `route` relays `request` as a WebSocket: an upgrade to `websocket` on a `websocket: true` route whose
    /// upstream can take one.
    private static func relays(
        _ request: borrowing HTTPServerRequest, route: CompiledRoute, upstream: UpstreamProvider?
    ) -> Bool {
        route.config.websocket && upstream?.tunnelProvider != nil && request.upgradeInput != nil
            && request.head.requestsUpgrade(to: "websocket")
    }

    /// A fresh `Sec-WebSocket-Key`: 16 random bytes in base64.
    static func newKey() -> String {
        Data(randomBytes(16)).base64EncodedString()
    }

    /// `count` bytes from the system's generator (a handshake's key, a frame's masking key: rare, and never to be
    /// predictable).
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The client's bytes for the upstream connection, pulled as it has room for them; after ``goAway()``, up to the
    /// end of the frame they are in, then the gateway's Close, then nothing.
    func makeStream() -> AsyncThrowingStream<[UInt8], any Error> {
        AsyncThrowingStream(unfolding: { [self] in
            while true {
                switch closing.withLock({ $0.beforeReadingClient() }) {
                case .end: return nil
                case .send(let frame): return frame
                case .read: break
                }
                let chunk: [UInt8]?
                do {
                    chunk = try await source.next()
                } catch {
                    // Woken for the Close, or the client's side ended once the Close was due (an HTTP/2 server
                    // aborts the request side when the Close ends the response): the Close goes first.
                    if error is GoingAwayWakeUp || closing.withLock({ $0.clientStreamEnded() }) { continue }
                    throw error
                }
                guard let chunk else {
                    if closing.withLock({ $0.clientStreamEnded() }) { continue }
                    return nil
                }
                guard let forwarded = closing.withLock({ $0.forwardToUpstream(chunk) }) else { continue }
                relayed.add(forwarded.count, ordering: .relaxed)
                return forwarded
            }
        })
    }

    /// The client's bytes relayed so far.
    var bytesRelayed: Int { relayed.load(ordering: .relaxed) }
}
