import HTTPWire
import NetCore

/// The connections of one client to one origin on one loop: idle connections reused last-in first-out, a cap on open
/// connections and a bounded queue of waiting exchanges. Loop thread only.
final class HTTPOriginPool {
    let origin: HTTPOrigin
    let loop: EventLoop
    let configuration: HTTPClient.Configuration
    let tls: TLSContext?
    private var idle: [HTTP1ClientConnection] = []
    private var all: [ObjectIdentifier: HTTP1ClientConnection] = [:]
    private var waiting: [HTTPClientExchange] = []
    private var waitingHead = 0
    private var addresses: [SocketAddress] = []

    init(origin: HTTPOrigin, loop: EventLoop, configuration: HTTPClient.Configuration, tls: TLSContext?) {
        self.origin = origin
        self.loop = loop
        self.configuration = configuration
        self.tls = tls
    }

    var openConnections: Int { all.count }

    /// Runs `exchange` on an idle connection, a new one, or after a connection frees up.
    func submit(_ exchange: HTTPClientExchange, addresses: [SocketAddress]) {
        if !addresses.isEmpty { self.addresses = addresses }
        if !exchange.requiresFreshConnection {
            while let connection = idle.popLast() {
                if connection.connection.isClosed { continue }
                connection.start(exchange)
                return
            }
        }
        if all.count < configuration.maxConnectionsPerOrigin {
            open(for: exchange)
            return
        }
        guard waiting.count - waitingHead < configuration.maxWaitingRequestsPerOrigin else {
            exchange.fail(.poolExhausted)
            return
        }
        waiting.append(exchange)
        exchange.onCancel = { [weak exchange] in exchange?.fail(.cancelled) }
    }

    private func open(for exchange: HTTPClientExchange) {
        guard let address = addresses.first else {
            exchange.fail(.nameResolutionFailed(host: origin.host))
            return
        }
        do {
            let connection = try Connection(connectingTo: address, loop: loop, tls: tls, serverName: origin.host)
            let client = HTTP1ClientConnection(
                connection: connection, pool: self,
                limits: HTTP1ResponseParser.Limits(maxHeaderBytes: configuration.maxResponseHeaderBytes,
                                                   maxHeaders: configuration.maxResponseHeaders,
                                                   maxBodyBytes: configuration.maxResponseBodyBytes),
                connectTimeout: min(configuration.connectTimeout, remaining(exchange)))
            connection.delegate = client
            all[ObjectIdentifier(client)] = client
            client.start(exchange)
            try connection.start()
        } catch {
            exchange.fail(.connectFailed(reason: "\(error)"))
        }
    }

    private func remaining(_ exchange: HTTPClientExchange) -> Duration {
        guard let deadline = exchange.deadline else { return .seconds(3600) }
        let now = EventLoop.now()
        return deadline > now ? .nanoseconds(Int64(clamping: deadline - now)) : .zero
    }

    private func nextWaiter() -> HTTPClientExchange? {
        while waitingHead < waiting.count {
            let exchange = waiting[waitingHead]
            waitingHead += 1
            if waitingHead == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                waitingHead = 0
            }
            if !exchange.isFinished { return exchange }
        }
        return nil
    }

    /// A connection finished an exchange and can take another.
    func release(_ connection: HTTP1ClientConnection) {
        if let next = nextWaiter() {
            connection.start(next)
        } else {
            idle.append(connection)
        }
    }

    /// A connection closed; its unfinished exchange is retried once on a fresh connection when that is safe (idempotent,
    /// the connection had been reused, no response byte arrived), else failed.
    func connectionClosed(_ connection: HTTP1ClientConnection, failing exchange: HTTPClientExchange?,
                          with error: HTTPClientError, reused: Bool) {
        all.removeValue(forKey: ObjectIdentifier(connection))
        idle.removeAll { $0 === connection }
        if let exchange, !exchange.isFinished {
            if reused, !exchange.retried, !exchange.responseStarted, exchange.head.method.isIdempotent,
               case .connectionClosed = error {
                exchange.retried = true
                exchange.requiresFreshConnection = true
                open(for: exchange)
            } else {
                exchange.fail(error)
            }
        }
        if all.count < configuration.maxConnectionsPerOrigin, let next = nextWaiter() {
            open(for: next)
        }
    }

    func expireIdle(now: UInt64) {
        for connection in idle { connection.expireIfIdle(now: now, timeout: configuration.idleTimeout) }
    }

    func closeAll() {
        for connection in Array(all.values) { connection.connection.close() }
    }
}
