import HTTPWire
import NetCore
import Synchronization

/// One server's state on one loop: its listeners, connections, date cache and timeout sweep. Loop thread only.
final class HTTPServerLoopContext {
    let loop: EventLoop
    let handler: any HTTPServerHandler
    /// Applied to every answer of `handler` (``HTTPServer/Configuration/compression``); nil without compression.
    let compressor: ResponseCompressor?
    /// Replaced by ``HTTPServer/update(limits:)`` (on this loop): connections read it when they check a limit, and a
    /// new connection's parser takes the sizes current when it opens.
    var limits: HTTPServerLimits
    let handshakeTimeout: Duration
    /// Whether HTTP/2 is served (ALPN `h2` on TLS, prior knowledge on cleartext).
    let http2: Bool
    let http2Settings: HTTP2Settings
    let dateCache: HTTPDateCache
    /// What the server reports to its owner (see ``HTTPServer/Configuration/events``).
    let events: HTTPServerEvents
    /// Handler workers alive on this loop, HTTP/1 (``HTTP1HandlerWorker``) and HTTP/2 (``HTTP2StreamWorker``): at most
    /// ``maxHandlerWorkers``, so a burst of connections does not keep a task's frame memory (up to about 20 KiB in the
    /// gateway) per connection.
    var handlerWorkers = 0
    static let maxHandlerWorkers = 128
    /// HTTP/2 stream workers waiting for a stream of any connection on this loop.
    private var idleStreamWorkers: [HTTP2StreamWorker] = []
    private var closing = false
    private let openConnections: AtomicCounter
    private var listeners: [Listener] = []
    /// The TLS context new connections on TLS listeners get: set when the first one is bound, replaced by
    /// ``HTTPServer/update(tls:)``. Open connections keep the one they were accepted with.
    var tlsContext: TLSContext?
    /// Keyed by the ``Connection``'s identity, so the protocol selector can hand over to the real handler.
    private var connections: [ObjectIdentifier: any HTTPServerConnectionHandler] = [:]
    private var sweepID: Int?
    private var draining = false
    private var drainedWaiters: [@Sendable () -> Void] = []

    init(
        loop: EventLoop, handler: any HTTPServerHandler, compressor: ResponseCompressor? = nil,
        limits: HTTPServerLimits, handshakeTimeout: Duration,
        http2: Bool = false, http2Settings: HTTP2Settings = HTTP2Settings(),
        events: HTTPServerEvents = HTTPServerEvents(),
        openConnections: AtomicCounter
    ) {
        self.events = events
        self.loop = loop
        self.dateCache = HTTPDateCache(loop: loop)
        self.handler = handler
        self.compressor = compressor
        self.limits = limits
        self.handshakeTimeout = handshakeTimeout
        self.http2 = http2
        self.http2Settings = http2Settings
        self.openConnections = openConnections
    }

    /// The settings of a new HTTP/2 connection's session: ``http2Settings`` with the request cap the lower of its own
    /// and the current limits' ``HTTPServerLimits/maxRequestsPerConnection`` (so a reload changes it for connections
    /// opened from then on).
    var http2SessionSettings: HTTP2Settings {
        var settings = http2Settings
        let limit = limits.maxRequestsPerConnection
        settings.maxRequestsPerConnection =
            limit == .max
            ? settings.maxRequestsPerConnection
            : min(settings.maxRequestsPerConnection ?? .max, limit)
        return settings
    }

    /// The handler's decision about `request` (``HTTPServerHandler/decide(_:)``), an answer as it is sent.
    func decision(for request: HTTPServerRequest) -> HTTPServerDecision {
        // Switched over as it comes, so that the answer moves on instead of being copied.
        switch handler.decide(request) {
        case .respond(let response): return .respond(compressor.applied(to: response, for: request))
        case .handle(let context): return .handle(context: context)
        case .answerLater(let context): return .answerLater(context: context)
        }
    }

    /// Binds `address` on this loop; `joiningOwnListener` when another loop of this server already bound it.
    func listen(on address: SocketAddress, tls: TLSContext?, joiningOwnListener: Bool) throws -> SocketAddress {
        let isTLS = tls != nil
        if let tls, tlsContext == nil { tlsContext = tls }
        let listener = try Listener(
            address: address, loop: loop, joiningOwnListener: joiningOwnListener,
            onAcceptFailure: events.acceptFailed
        ) { [weak self] fd, remote in
            guard let self else {
                Connection.closeAccepted(fd)
                return
            }
            accepted(fd: fd, remote: remote, tls: isTLS ? tlsContext : nil)
        }
        try listener.start()
        listeners.append(listener)
        if sweepID == nil {
            sweepID = loop.addTickHandler { [weak self] now in self?.sweep(now: now) }
        }
        return listener.address
    }

    private func accepted(fd: Int32, remote: SocketAddress?, tls: TLSContext?) {
        let open = openConnections.add(1)
        guard open <= limits.maxConnections, !draining else {
            openConnections.add(-1)
            Connection.closeAccepted(fd)
            return
        }
        do {
            let connection = try Connection(acceptedFD: fd, loop: loop, remoteAddress: remote, tls: tls)
            let server: any HTTPServerConnectionHandler =
                http2
                ? HTTPProtocolSelector(connection: connection, context: self)
                : HTTP1ServerConnection(connection: connection, context: self)
            connection.delegate = server
            connections[ObjectIdentifier(connection)] = server
            try connection.start()
        } catch {
            openConnections.add(-1)
            Connection.closeAccepted(fd)
        }
    }

    /// Makes `handler` serve `connection` from now on (the protocol selector's hand-over).
    func replaceHandler(of connection: Connection, with handler: any HTTPServerConnectionHandler) {
        guard !connection.isClosed, connections[ObjectIdentifier(connection)] != nil else { return }
        connections[ObjectIdentifier(connection)] = handler
        connection.delegate = handler
        if draining { handler.beginDrain() }
    }

    func connectionClosed(_ connection: Connection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        openConnections.add(-1)
        for listener in listeners { listener.resumeAccepting() }
        if draining && connections.isEmpty { notifyDrained() }
    }

    private func sweep(now: UInt64) {
        for connection in Array(connections.values) { connection.checkTimeouts(now: now) }
        idleStreamWorkers.removeAll { worker in
            guard worker.sweep() else { return false }
            handlerWorkers -= 1
            worker.retire()
            return true
        }
    }

    // MARK: HTTP/2 stream workers

    /// Runs `job` in a waiting stream worker, or a new one while the loop's budget allows; returns the worker, or nil
    /// when the caller must run the job in a task of its own.
    func runOnStreamWorker(_ job: @escaping HTTP2StreamWorker.Job) -> HTTP2StreamWorker? {
        if let worker = idleStreamWorkers.popLast() {
            worker.run(job)
            return worker
        }
        guard handlerWorkers < Self.maxHandlerWorkers, !closing else { return nil }
        handlerWorkers += 1
        return HTTP2StreamWorker.start(first: job, loop: loop) { [weak self] worker in
            guard let self, !worker.isRetired, !closing else {
                self?.handlerWorkers -= 1
                return false
            }
            idleStreamWorkers.append(worker)
            return true
        }
    }

    private func retireIdleStreamWorkers() {
        handlerWorkers -= idleStreamWorkers.count
        for worker in idleStreamWorkers { worker.retire() }
        idleStreamWorkers.removeAll()
    }

    /// Closes the listeners and drains connections; `done` runs when the last one has closed.
    func drain(done: @escaping @Sendable () -> Void) {
        draining = true
        for listener in listeners { listener.close() }
        listeners.removeAll()
        drainedWaiters.append(done)
        for connection in Array(connections.values) { connection.beginDrain() }
        if connections.isEmpty { notifyDrained() }
    }

    /// Closes every connection now.
    func closeAll() {
        for connection in Array(connections.values) { connection.connection.close() }
        for listener in listeners { listener.close() }
        listeners.removeAll()
        if connections.isEmpty { notifyDrained() }
    }

    private func notifyDrained() {
        closing = true
        retireIdleStreamWorkers()
        if let sweepID { loop.removeTickHandler(sweepID) }
        sweepID = nil
        let waiters = drainedWaiters
        drainedWaiters = []
        for waiter in waiters { waiter() }
    }
}
