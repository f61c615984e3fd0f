import HTTPWire
import NetCore

/// An HTTP/1.1 connection to one origin, running one exchange at a time. Loop thread only.
final class HTTP1ClientConnection: ConnectionDelegate {
    let connection: Connection
    unowned let pool: HTTPOriginPool
    private var parser: HTTP1ResponseParser
    private(set) var exchange: HTTPClientExchange?
    private(set) var isActive = false
    private(set) var reusable = true
    private(set) var exchangesServed = 0
    var idleSince = EventLoop.now()
    let openedAt = EventLoop.now()
    private var connectTimer: LoopTimer?
    /// The exchange waiting for this connection to become active.
    private var pendingExchange: HTTPClientExchange?

    init(connection: Connection, pool: HTTPOriginPool, limits: HTTP1ResponseParser.Limits, connectTimeout: Duration) {
        self.connection = connection
        self.pool = pool
        self.parser = HTTP1ResponseParser(limits: limits)
        connectTimer = connection.loop.schedule(after: connectTimeout) { [weak self] in
            guard let self, !self.isActive else { return }
            self.failAndClose(.connectTimeout)
        }
    }

    /// Sends `exchange` once the connection is active.
    func start(_ exchange: HTTPClientExchange) {
        if isActive { send(exchange) } else { pendingExchange = exchange }
    }

    func connectionDidBecomeActive(_ connection: Connection) {
        isActive = true
        connectTimer?.cancel()
        connectTimer = nil
        if connection.negotiatedProtocol == "h2" {
            // A probe that ALPN turned into HTTP/2: the pool hands the connection to an HTTP/2 client.
            let pending = pendingExchange
            pendingExchange = nil
            pool.adoptHTTP2(connection, from: self, pending: pending, openedAt: openedAt)
            return
        }
        pool.learnedHTTP1()
        if let pending = pendingExchange {
            pendingExchange = nil
            pending.connectDuration = .nanoseconds(Int64(clamping: EventLoop.now() &- openedAt))
            send(pending)
        }
    }

    private func send(_ exchange: HTTPClientExchange) {
        guard !exchange.isFinished else {
            pool.release(self)
            return
        }
        self.exchange = exchange
        exchangesServed += 1
        // A streamed body is consumed as it arrives: the collected-body limit does not apply to it.
        parser.expectResponse(to: exchange.head.method, bodyLimited: exchange.limitsCollectedBody)
        var output: [UInt8] = []
        output.reserveCapacity(256 + exchange.body.count)
        do {
            try HTTP1Serializer.writeRequestHead(exchange.head, into: &output)
        } catch {
            self.exchange = nil
            exchange.fail(.invalidURL("request head cannot be serialized: \(error)"))
            pool.release(self)
            return
        }
        output.append(contentsOf: exchange.body)
        let now = EventLoop.now()
        // The exchange is recognised by identity rather than captured weakly: a weak reference would give every
        // exchange a side table (an allocation per request). Both closures are dropped when the exchange ends.
        let id = ObjectIdentifier(exchange)
        if let deadline = exchange.responseDeadline(now: now) {
            exchange.timer = connection.loop.schedule(atNanoseconds: deadline) { [weak self] in
                guard let self, let current = self.exchange, ObjectIdentifier(current) == id, current.responseHead == nil else {
                    return
                }
                self.failAndClose(.responseTimeout)
            }
        }
        exchange.onCancel = { [weak self] in
            guard let self, let current = self.exchange, ObjectIdentifier(current) == id else { return }
            self.failAndClose(.cancelled)
        }
        connection.write(output)
        if !exchange.body.isEmpty {
            exchange.progress.upload?(Int64(exchange.body.count), Int64(exchange.body.count))
        }
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard let exchange else {
            // Bytes while idle: the server is confused or closing; never hand them to a later request.
            reusable = false
            connection.close()
            return
        }
        if exchange.firstByteAt == 0 { exchange.firstByteAt = EventLoop.now() }
        exchange.responseStarted = true
        parser.append(bytes)
        drainParser()
    }

    private func drainParser() {
        while let exchange, let event = parser.next() {
            switch event {
            case .informational:
                continue
            case .head(let head, _):
                exchange.responseHead = head
                exchange.timer?.cancel()
                if head.headers.containsToken("close", name: "Connection") || head.version < .http1_1 { reusable = false }
                exchange.chooseDelivery(for: head)
                if exchange.isStreamed {
                    exchange.onBodyDemand = { [weak self, weak exchange] in
                        guard let self, let exchange, self.exchange === exchange else { return }
                        self.connection.resumeReading()
                    }
                    exchange.headReceived()
                }
            case .body(let bytes):
                let received = exchange.countBody(bytes.count)
                // A streamed body's reader is behind: stop reading until it catches up.
                if !exchange.receive(bytes) { connection.pauseReading() }
                if let download = exchange.progress.download {
                    download(received, exchange.responseHead?.headers.first(name: "Content-Length").flatMap { Int64($0) })
                }
            case .end:
                self.exchange = nil
                if parser.hasUnexpectedBytes { reusable = false }
                connection.resumeReading()
                exchange.succeed()
                finishExchange()
                return
            case .error(let error):
                failAndClose(.malformedResponse(reason: error.reason))
                return
            }
        }
    }

    private func finishExchange() {
        if reusable && !connection.isClosed {
            idleSince = EventLoop.now()
            pool.release(self)
        } else {
            connection.close()
        }
    }

    func connectionDidReadEOF(_ connection: Connection) {
        reusable = false
        if let exchange, !exchange.responseStarted {
            // Closed before any response byte (a stale keep-alive connection, typically): the pool decides whether
            // the request may be retried on a fresh connection.
            connection.close()
            return
        }
        if exchange != nil, let event = parser.connectionClosed() {
            switch event {
            case .end:
                let finished = exchange
                exchange = nil
                finished?.succeed()
            case .error(let error):
                let started = exchange?.responseStarted ?? false
                failAndClose(started ? .connectionClosed(responseStarted: true) : .malformedResponse(reason: error.reason))
                return
            default:
                break
            }
        }
        connection.close()
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        connectTimer?.cancel()
        let reason: HTTPClientError
        if !isActive {
            if let tlsError = error as? TLSError {
                reason = .tlsFailed(reason: tlsError.reason)
            } else {
                reason = .connectFailed(reason: error.map { "\($0)" } ?? "closed")
            }
        } else {
            reason = .connectionClosed(responseStarted: exchange?.responseStarted ?? false)
        }
        let failed = exchange ?? pendingExchange
        exchange = nil
        pendingExchange = nil
        pool.connectionClosed(self, failing: failed, with: reason, reused: exchangesServed > 1)
    }

    private func failAndClose(_ error: HTTPClientError) {
        reusable = false
        let failed = exchange ?? pendingExchange
        exchange = nil
        pendingExchange = nil
        failed?.fail(error)
        connection.close()
    }

    /// Closes the connection if it has been idle past `timeout`.
    func expireIfIdle(now: UInt64, timeout: Duration) {
        if exchange == nil && isActive && now &- idleSince > timeout.nanoseconds { connection.close() }
    }
}
