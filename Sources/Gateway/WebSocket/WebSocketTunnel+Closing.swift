import NetCore
import Synchronization

/// The drain's Close handshake for a tunnel: when the gateway drains, each end gets a Close frame with status 1001
/// ("going away") at the next boundary between frames of its direction, and nothing from the other end after it, so
/// that the client reconnects elsewhere at once and the upstream ends its side cleanly, instead of both being held
/// until the drain timeout and then cut. Each end's own Close in reply is read and dropped: it has been told already.
extension WebSocketTunnel {
    /// Starts the Close handshake (see the extension's summary). Safe to call more than once, from any thread.
    func goAway() {
        if closing.withLock({ $0.goAway() }) {
            // The reader waits for client bytes at a frame boundary: woken, it sends the Close.
            source.fail(GoingAwayWakeUp())
        }
    }

    /// The relay of the upstream's bytes to `client` has started: the tunnel is open, and joins the gateway's open
    /// tunnels (going away at once when the gateway is already draining).
    func attach(client: ByteStream) {
        closing.withLock { $0.client = client }
        registry?.add(self)
    }

    /// The relay has ended: the tunnel leaves the gateway's open tunnels.
    func detach() {
        registry?.remove(self)
    }

    /// Hands an upstream chunk to the client's stream, up to the end of the frame it is in once the tunnel goes
    /// away, then the Close. Returns the stream's `yield`: false when the relay must wait for demand.
    func offer(_ chunk: [UInt8], to client: ByteStream) -> Bool {
        closing.withLock { $0.forwardToClient(chunk, into: client) }
    }
}

/// Wakes a tunnel's reader that waits for client bytes when the drain's Close is due.
struct GoingAwayWakeUp: Error {}

/// One direction of a tunnel, as the drain's Close handshake sees it.
enum TunnelDirection: Sendable {
    /// Bytes pass as they come.
    case relaying
    /// The frame in flight has passed; the Close goes next.
    case closeDue
    /// The Close has gone; what else the other end sends is dropped.
    case closed
}

/// What a tunnel's upstream writer does next.
enum TunnelPull: Sendable {
    case read
    case send([UInt8])
    case end
}

/// A tunnel's frame boundaries both ways and the state of its drain's Close handshake, behind the tunnel's lock.
struct TunnelClosing: Sendable {
    private var towardUpstream = WebSocketFrameScanner()
    private var towardClient = WebSocketFrameScanner()
    private var goingAway = false
    private var upstreamSide = TunnelDirection.relaying
    private var clientSide = TunnelDirection.relaying
    /// The upstream writer waits in the client stream's `next()`.
    var readingClient = false
    /// The client's response stream, once the tunnel is open.
    weak var client: ByteStream?

    /// Before the upstream writer reads client bytes: the Close when it is due, the end after it.
    mutating func beforeReadingClient() -> TunnelPull {
        switch upstreamSide {
        case .closed:
            return .end
        case .closeDue:
            upstreamSide = .closed
            return .send(WebSocketGoingAway.toUpstream(key: WebSocketTunnel.randomBytes(4)))
        case .relaying:
            readingClient = true
            return .read
        }
    }

    /// The client's stream ended or failed while the upstream writer waited in it. Returns whether the drain's Close
    /// is due all the same: it is sent before the end.
    mutating func clientStreamEnded() -> Bool {
        readingClient = false
        guard case .closeDue = upstreamSide else { return false }
        return true
    }

    /// The part of a client chunk that goes upstream: all of it, or once going away the bytes up to the end of the
    /// frame in flight (nil when none: the Close is next).
    mutating func forwardToUpstream(_ chunk: [UInt8]) -> [UInt8]? {
        readingClient = false
        guard case .relaying = upstreamSide else { return nil }
        guard goingAway else {
            towardUpstream.advance(over: chunk)
            return chunk
        }
        guard let boundary = towardUpstream.firstBoundary(in: chunk) else { return chunk }
        upstreamSide = .closeDue
        return boundary == 0 ? nil : Array(chunk[..<boundary])
    }

    /// Hands an upstream chunk to `client` (see ``WebSocketTunnel/offer(_:to:)``).
    mutating func forwardToClient(_ chunk: [UInt8], into client: ByteStream) -> Bool {
        guard case .relaying = clientSide else { return true }
        guard goingAway else {
            towardClient.advance(over: chunk)
            return client.yield(chunk)
        }
        guard let boundary = towardClient.firstBoundary(in: chunk) else { return client.yield(chunk) }
        if boundary > 0 { client.yield(Array(chunk[..<boundary])) }
        closeClientSide(client)
        return true
    }

    /// Marks the tunnel going away; each direction at a frame boundary gets its Close now (the client's written at
    /// once, the upstream's by its writer). Returns whether the upstream writer must be woken for it.
    mutating func goAway() -> Bool {
        guard !goingAway else { return false }
        goingAway = true
        if case .relaying = clientSide, towardClient.isAtBoundary, let client { closeClientSide(client) }
        guard case .relaying = upstreamSide, towardUpstream.isAtBoundary else { return false }
        upstreamSide = .closeDue
        return readingClient
    }

    private mutating func closeClientSide(_ client: ByteStream) {
        client.yield(WebSocketGoingAway.toClient)
        client.finish()
        clientSide = .closed
    }
}

/// The gateway's open WebSocket tunnels, so that a drain can send them all their Close.
final class OpenTunnels: Sendable {
    private struct State {
        var draining = false
        var tunnels: [ObjectIdentifier: WeakTunnel] = [:]
    }

    private struct WeakTunnel {
        weak var tunnel: WebSocketTunnel?
    }

    private let state = Mutex(State())

    /// Adds an open tunnel; when the gateway is draining, it goes away at once.
    func add(_ tunnel: WebSocketTunnel) {
        let draining = state.withLock { state in
            state.tunnels[ObjectIdentifier(tunnel)] = WeakTunnel(tunnel: tunnel)
            return state.draining
        }
        if draining { tunnel.goAway() }
    }

    func remove(_ tunnel: WebSocketTunnel) {
        _ = state.withLock { $0.tunnels.removeValue(forKey: ObjectIdentifier(tunnel)) }
    }

    /// The drain begins: every open tunnel, and every one that opens from now on, goes away. Returns how many were
    /// open.
    @discardableResult
    func goAway() -> Int {
        let open = state.withLock { state in
            state.draining = true
            return state.tunnels.values.compactMap(\.tunnel)
        }
        for tunnel in open { tunnel.goAway() }
        return open.count
    }
}
