import HTTPWire
import NetCore
import Synchronization

/// One server's state on one loop: its listeners, connections, date cache and timeout sweep. Loop thread only.
final class HTTPServerLoopContext {
    let loop: EventLoop
    let handler: any HTTPServerHandler
    let limits: HTTPServerLimits
    let handshakeTimeout: Duration
    let dateCache = HTTPDateCache()
    private let openConnections: AtomicCounter
    private var listeners: [Listener] = []
    private var connections: [ObjectIdentifier: HTTP1ServerConnection] = [:]
    private var sweepID: Int?
    private var draining = false
    private var drainedWaiters: [@Sendable () -> Void] = []

    init(loop: EventLoop, handler: any HTTPServerHandler, limits: HTTPServerLimits, handshakeTimeout: Duration,
         openConnections: AtomicCounter) {
        self.loop = loop
        self.handler = handler
        self.limits = limits
        self.handshakeTimeout = handshakeTimeout
        self.openConnections = openConnections
    }

    func listen(on address: SocketAddress, tls: TLSContext?) throws -> SocketAddress {
        let listener = try Listener(address: address, loop: loop) { [weak self] fd, remote in
            guard let self else {
                Connection.closeAccepted(fd)
                return
            }
            accepted(fd: fd, remote: remote, tls: tls)
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
            let server = HTTP1ServerConnection(connection: connection, context: self)
            connection.delegate = server
            connections[ObjectIdentifier(server)] = server
            try connection.start()
        } catch {
            openConnections.add(-1)
            Connection.closeAccepted(fd)
        }
    }

    func connectionClosed(_ connection: HTTP1ServerConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        openConnections.add(-1)
        for listener in listeners { listener.resumeAccepting() }
        if draining && connections.isEmpty { notifyDrained() }
    }

    private func sweep(now: UInt64) {
        for connection in Array(connections.values) { connection.checkTimeouts(now: now) }
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
        if let sweepID { loop.removeTickHandler(sweepID) }
        sweepID = nil
        let waiters = drainedWaiters
        drainedWaiters = []
        for waiter in waiters { waiter() }
    }
}
