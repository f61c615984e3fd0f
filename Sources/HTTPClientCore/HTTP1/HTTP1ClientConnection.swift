import HTTPWire
import NetCore

/// An HTTP/1.1 connection to one origin, running one exchange at a time. Loop thread only.
final class HTTP1ClientConnection: ConnectionDelegate {
    // Loop-confined state skips dynamic exclusivity checks (see `Connection`): scalars, references and optionals
    // only read or assigned whole, and the parser (whose mutations call nothing outside it).
    let connection: Connection
    unowned let pool: HTTPOriginPool
    @exclusivity(unchecked) private var parser: HTTP1ResponseParser
    /// The exchange under way. The exchange points back here while it runs (``HTTPClientExchange/http1Connection``):
    /// that reference is dropped as soon as this one is, which breaks the cycle (unless the exchange already moved on
    /// to another connection).
    @exclusivity(unchecked) private(set) var exchange: HTTPClientExchange? {
        didSet {
            if let oldValue, oldValue !== exchange, oldValue.http1Connection === self { oldValue.http1Connection = nil }
        }
    }
    @exclusivity(unchecked) private(set) var isActive = false
    @exclusivity(unchecked) private(set) var reusable = true
    @exclusivity(unchecked) private(set) var exchangesServed = 0
    /// The caller the pool counts this connection for (fair share), from the exchange it was given until it is back.
    @exclusivity(unchecked) var shareHolder: HTTPOriginShares.Holder?
    @exclusivity(unchecked) var idleSince = EventLoop.now()
    /// How long (ns) the connection may sit idle and still be reused: the client's idle timeout, or the server's
    /// `Keep-Alive: timeout=` less a margin when that is shorter, so that a request is not sent just as the server
    /// closes the connection (a POST lost that way cannot be retried).
    @exclusivity(unchecked) private var reuseLimit: UInt64
    let openedAt = EventLoop.now()
    @exclusivity(unchecked) private var connectTimer: LoopTimer?
    /// The response-head deadline's timer: one per connection, armed lazily. When it fires it checks the exchange at
    /// hand then, and re-arms for that exchange's due time if it is later, so a connection serving a stream of
    /// requests with the same timeout schedules about one timer per timeout period rather than one per request.
    @exclusivity(unchecked) private var responseTimer: LoopTimer?
    @exclusivity(unchecked) private var responseTimerDue: UInt64 = 0
    /// The exchange waiting for this connection to become active.
    @exclusivity(unchecked) private var pendingExchange: HTTPClientExchange?
    /// A streamed body's request head, written together with its first chunk.
    @exclusivity(unchecked) private var pendingHead: [UInt8]?
    /// Whether the streamed body being sent is framed chunked (it has no declared length).
    @exclusivity(unchecked) private var chunkedUpload = false
    /// The pool's `Host` field line (see ``HTTPOriginPool/hostField``), for requests without their own.
    private let hostField: [UInt8]?
    /// A streamed body's next chunk is pulled only while at most this much waits to be written.
    static let writeHighWater = 256 * 1024

    init(
        connection: Connection, pool: HTTPOriginPool, limits: HTTP1ResponseParser.Limits, connectTimeout: Duration,
        idleTimeout: Duration
    ) {
        self.connection = connection
        self.pool = pool
        self.parser = HTTP1ResponseParser(limits: limits)
        self.reuseLimit = idleTimeout.nanoseconds
        self.hostField = pool.hostField
        // The timers hold the connection strongly: it cancels them once active and when it closes, which drops the
        // closures. A weak capture would give the connection a side table, slowing each retain and release of it.
        connectTimer = connection.loop.schedule(after: connectTimeout) { [self] in
            guard !isActive else { return }
            // Through the close, so the pool may pass the exchange on to the name's next address.
            self.reusable = false
            self.connection.close(error: HTTPClientError.connectTimeout)
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
        parser.expectResponse(
            to: exchange.request.method, bodyLimited: exchange.limitsCollectedBody,
            upgrade: exchange.upgradeBody != nil)
        var output = connection.outputBuffer(reservingCapacity: 256 + exchange.body.count)
        do {
            try exchange.writeHead(into: &output, hostField: hostField)
        } catch {
            self.exchange = nil
            exchange.fail(.invalidURL("request head cannot be serialized: \(error)"))
            pool.release(self)
            return
        }
        exchange.lastSendProgress = connection.loop.roundTime
        armResponseTimer(for: exchange)
        exchange.http1Connection = self
        if exchange.streamedBody != nil {
            startUpload(exchange, head: output)
            return
        }
        if !exchange.body.isEmpty { output.append(contentsOf: exchange.body) }
        connection.write(output)
        if exchange.upload != nil, self.exchange === exchange {
            exchange.upload?.queue(exchange.body.count, complete: true)
            exchange.upload?.update(unsent: connection.pendingWriteBytes)
        }
    }

    /// Cancels `exchange` if it is the one this connection runs: the connection closes (the response may be half
    /// read). A finished exchange is left alone.
    func cancel(_ exchange: HTTPClientExchange) {
        guard self.exchange === exchange else { return }
        failAndClose(.cancelled)
    }

    /// Makes sure the response timer fires no later than `exchange` is due (see ``HTTPClientExchange/responseDue()``).
    /// A timer already armed for an earlier time stays: it re-arms when it fires.
    private func armResponseTimer(for exchange: HTTPClientExchange) {
        guard let due = exchange.responseDue() else { return }
        if responseTimer != nil && responseTimerDue <= due { return }
        responseTimer?.cancel()
        responseTimerDue = due
        responseTimer = connection.loop.schedule(atNanoseconds: due) { [self] in responseTimerFired() }
    }

    /// The response timer fired: the exchange at hand, if its response is not complete, times out, or waits on when
    /// it is due later (a later exchange, or a request or response that moved since).
    private func responseTimerFired() {
        responseTimer = nil
        guard let exchange, let due = exchange.responseDue() else { return }
        if due > EventLoop.now() {
            armResponseTimer(for: exchange)
            return
        }
        failAndClose(exchange.responseStarted ? .responseBodyTimeout : .responseTimeout)
    }

    // MARK: Streamed request bodies

    /// Sends the exchange's streamed body after `head`, which goes out with the first chunk: `Content-Length` framing
    /// when the body declares a length, else chunked with a last-chunk. A chunk is pulled only while the write queue
    /// holds at most `writeHighWater` bytes, so about one mark and one chunk sit in user space.
    private func startUpload(_ exchange: HTTPClientExchange, head: [UInt8]) {
        pendingHead = head
        chunkedUpload = exchange.streamedBody?.length == nil
        exchange.startBodyPump { [weak self, weak exchange] pump, event in
            guard let self, let exchange, self.exchange === exchange, exchange.bodyPump === pump else { return }
            self.upload(event, from: pump, for: exchange)
        }
    }

    private func upload(_ event: RequestBodyPump.Event, from pump: RequestBodyPump, for exchange: HTTPClientExchange) {
        switch event {
        case .chunk(let chunk):
            var bytes: [UInt8]
            if chunkedUpload {
                bytes = pendingHead ?? []
                bytes.reserveCapacity(bytes.count + chunk.count + 16)
                HTTP1Serializer.writeChunk(chunk, into: &bytes)
            } else if var head = pendingHead {
                head.append(contentsOf: chunk)
                bytes = head
            } else {
                bytes = chunk
            }
            pendingHead = nil
            // At its declared length the body is complete: the server may answer, and the connection is reusable,
            // even before the pump has seen the stream end.
            let complete = exchange.bodyQueued(chunk.count, now: EventLoop.now())
            connection.write(bytes)
            guard self.exchange === exchange, !connection.isClosed else { return }
            exchange.upload?.update(unsent: connection.pendingWriteBytes)
            exchange.pull(
                from: pump,
                roomForMore: complete || connection.pendingWriteBytes <= HTTP1ClientConnection.writeHighWater)
        case .end where exchange.switchedProtocols, .failed where exchange.switchedProtocols:
            closeTunnel(exchange)
        case .end:
            exchange.bodyPumpEnded()
            guard !exchange.isBodyComplete else { return }
            var bytes = pendingHead ?? []
            pendingHead = nil
            if chunkedUpload { HTTP1Serializer.writeLastChunk(into: &bytes) }
            exchange.bodyComplete(now: EventLoop.now())
            connection.write(bytes)
            guard self.exchange === exchange else { return }
            exchange.upload?.update(unsent: connection.pendingWriteBytes)
        case .failed(let error):
            failAndClose(error)
        }
    }

    /// Whether a 101 `head` names (in `Upgrade`) a protocol that the request's `Upgrade` field offered.
    private static func switches(to head: HTTPResponseHead, asked request: HTTPFields) -> Bool {
        let offered = request.tokens(name: "Upgrade").map { $0.lowercased() }
        let chosen = head.headers.tokens(name: "Upgrade")
        return chosen.count == 1 && offered.contains(chosen[0].lowercased())
    }

    /// The server switched protocols (101): from now on the caller's upgrade stream is sent as it is, pulled as the
    /// write queue drains, and the connection is never reused.
    private func startTunnel(_ exchange: HTTPClientExchange) {
        reusable = false
        exchange.switchedProtocols = true
        exchange.lastSendProgress = connection.loop.roundTime
        pendingHead = nil
        chunkedUpload = false
        // The idle limit may be shorter than the response timeout the timer was armed for.
        armResponseTimer(for: exchange)
        exchange.startBodyPump { [weak self, weak exchange] pump, event in
            guard let self, let exchange, self.exchange === exchange, exchange.bodyPump === pump else { return }
            self.upload(event, from: pump, for: exchange)
        }
    }

    /// The caller's side of a tunnel ended (or failed): the connection closes once what is queued is sent, and the
    /// response body ends there.
    private func closeTunnel(_ exchange: HTTPClientExchange) {
        exchange.bodyPumpEnded()
        self.exchange = nil
        exchange.succeed()
        connection.closeAfterFlush()
    }

    /// The server answered before the request body was sent: send no more of it, and never reuse the connection
    /// (the server is still waiting for the rest, or will read it as the next request).
    private func stopUpload(_ exchange: HTTPClientExchange) {
        exchange.stopBodyPump()
        pendingHead = nil
        reusable = false
    }

    func connectionDidDrainWrites(_ connection: Connection) {
        // Called after every write that empties the queue: cheap when there is no body or progress to follow.
        guard let exchange, exchange.upload != nil || exchange.isSendingBody else { return }
        exchange.upload?.update(unsent: 0)
        guard exchange.isSendingBody else { return }
        exchange.lastSendProgress = connection.loop.roundTime
        if exchange.bodyPumpPaused {
            exchange.bodyPumpPaused = false
            exchange.bodyPump?.requestMore()
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
        exchange.lastReceiveProgress = connection.loop.roundTime
        parser.append(bytes)
        drainParser()
    }

    private func drainParser() {
        while let exchange {
            // Switched on as it is returned (not bound first), so the head it carries moves into the exchange instead
            // of being copied.
            switch parser.next() {
            case nil:
                return
            case .informational:
                continue
            case .head(let head, let framing):
                if head.status == 101, !Self.switches(to: head, asked: exchange.request.headers) {
                    // RFC 9110 §15.2.2: the server switches to one of the protocols the request listed, and says which.
                    failAndClose(
                        .malformedResponse(reason: "101 Switching Protocols to a protocol the request did not ask for"))
                    return
                }
                // `Connection: close` and the server's `Keep-Alive` (the first one), found by their tokens: the
                // scans compare one byte per field, inlined, and only the fields found are read.
                var closes = head.version < .http1_1
                var connectionField = head.headers.firstIndex(token: .connection)
                while !closes, let index = connectionField {
                    closes = head.headers.withField(at: index) { _, value in HTTPClient.connectionListHasClose(value) }
                    connectionField = head.headers.firstIndex(token: .connection, from: index + 1)
                }
                if closes { reusable = false }
                if let index = head.headers.firstIndex(token: .keepAlive),
                    let limit = HTTPClient.keepAliveReuseLimit(head.headers.value(at: index))
                {
                    reuseLimit = min(reuseLimit, limit.nanoseconds)
                }
                exchange.chooseDelivery(for: framing)
                let status = head.status
                exchange.responseHead = consume head
                // A refusal (or a close) before the whole body went out: the server does not want the rest
                // (RFC 9112 §9.5). A success may read on, so the body keeps going until the response ends.
                if exchange.isSendingBody && (status >= 300 || !reusable) { stopUpload(exchange) }
                if status == 101 { startTunnel(exchange) }
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
                    download(
                        received, exchange.responseHead?.headers.first(.contentLength).flatMap { Int64($0) })
                }
            case .end:
                if exchange.isSendingBody { stopUpload(exchange) }
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
        let spent = pool.configuration.maxRequestsPerConnection.map { exchangesServed >= $0 } ?? false
        if reusable && !spent && !connection.isClosed {
            idleSince = connection.loop.roundTime
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
                failAndClose(
                    started ? .connectionClosed(responseStarted: true) : .malformedResponse(reason: error.reason))
                return
            default:
                break
            }
        }
        connection.close()
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        connectTimer?.cancel()
        responseTimer?.cancel()
        responseTimer = nil
        let reason =
            isActive
            ? HTTPClientError.connectionClosed(responseStarted: exchange?.responseStarted ?? false)
            : HTTPClientError(closedBeforeActive: error)
        let failed = exchange ?? pendingExchange
        exchange = nil
        pendingExchange = nil
        failed?.stopBodyPump()
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

    /// Closes the connection if it has been idle past the client's idle timeout or the server's own limit (see
    /// `reuseLimit`).
    func expireIfIdle(now: UInt64) {
        if exchange == nil && isActive && now &- idleSince > reuseLimit { connection.close() }
    }

    /// Whether the connection has been idle short enough to be reused now (see `reuseLimit`).
    func mayBeReused(now: UInt64) -> Bool { now &- idleSince < reuseLimit }
}
