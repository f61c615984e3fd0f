import HTTP2Transport
import HTTPWire
import NetCore

/// An HTTP/2 connection to one origin carrying many exchanges at once over an ``HTTP2Session`` in client mode.
/// Loop thread only.
///
/// - Streams open only after the server's first SETTINGS, and never more than its SETTINGS_MAX_CONCURRENT_STREAMS;
///   exchanges beyond that wait in this connection's queue (bounded by the pool's wait-queue limit).
/// - GOAWAY: streams above its last-stream-id and queued exchanges go back to the pool (the server did not process
///   them); the others finish here, then the connection closes. REFUSED_STREAM before any response is retried too.
/// - Response bodies are acknowledged (WINDOW_UPDATE) as they are collected; request bodies wait in the session's
///   per-stream queue until the server's window lets them go. A streamed request body (stream or file) is pulled one
///   chunk at a time by a ``RequestBodyPump`` while that queue is below its mark (`.windowAvailable` resumes it), so
///   the stream and connection windows hold it back; a response that ends before the body does resets the stream
///   (CANCEL) and sends no more of it.
/// - A connection-level failure fails every stream on it.
final class HTTP2ClientConnection: ConnectionDelegate, HTTP2Connection {
    let connection: Connection
    unowned let pool: HTTPOriginPool
    let session: HTTP2Session
    let configuration: HTTPClient.Configuration
    var streams: [Int32: HTTPClientExchange] = [:]
    /// Streams whose upload progress is reported as the session hands their body bytes out.
    var uploads: [Int32: HTTPClientExchange] = [:]
    private var queued = HTTPClientWaitQueue()
    var isActive = false
    var settingsReceived = false
    /// No new streams here: GOAWAY received or sent, or the connection is closing.
    var isGoingAway = false
    /// Streams opened so far (for ``HTTPClient/Configuration/maxRequestsPerConnection``).
    private var streamsOpened = 0
    /// Whether the TLS handshake must have selected `h2` (mode `.always`).
    let requiresALPN: Bool
    var flushScheduled = false
    var connectTimer: LoopTimer?
    let openedAt: UInt64
    /// Connect time, given to the first exchange sent.
    var connectDuration: Duration?
    var idleSince = EventLoop.now()
    /// Times an exchange is moved to another connection because the server did not process it.
    /// (Each move means the server processed other streams first, or refused this one; the cap stops a server that
    /// never processes anything from bouncing a request forever.)
    static let maxUnprocessedRetries = 10

    /// - Parameter openedAt: when the TCP connect started (for the connect timing), `nil` when it is a new one.
    init(
        connection: Connection, pool: HTTPOriginPool, connectTimeout: Duration?, requiresALPN: Bool,
        openedAt: UInt64? = nil
    ) throws {
        self.connection = connection
        self.pool = pool
        self.configuration = pool.configuration
        self.requiresALPN = requiresALPN
        self.openedAt = openedAt ?? EventLoop.now()
        session = try HTTP2Session(role: .client, settings: pool.configuration.http2Settings)
        if let connectTimeout {
            connectTimer = connection.loop.schedule(after: connectTimeout) { [weak self] in
                guard let self, !self.isActive else { return }
                // Through the close, so the pool may pass the exchanges on to the name's next address.
                self.connection.close(error: HTTPClientError.connectTimeout)
            }
        }
    }

    /// Exchanges sent or waiting here.
    var load: Int { streams.count + queued.count }

    /// Queues `exchange`; it starts as soon as the server allows another stream.
    func enqueue(_ exchange: HTTPClientExchange) {
        guard !isGoingAway else {
            retryUnprocessed(exchange)
            return
        }
        guard queued.enqueue(exchange, limit: configuration.maxWaitingRequestsPerOrigin) else { return }
        startQueued()
    }

    /// Fails the queued exchanges whose wait expired (see ``HTTPClientExchange/expireWait(now:)``).
    func expireWaiting(now: UInt64) {
        queued.expireWaits(now: now)
    }

    /// The next queued exchange: the first, or with the fair share (``HTTPClient/Configuration/maxShare``) the first
    /// whose caller holds fewer than its share of the connection's streams (the ones open now and the one about to
    /// open), taken out of the queue wherever it is, else the first.
    private func nextQueued() -> HTTPClientExchange? {
        if queued.isEmpty { return nil }
        guard let share = configuration.maxShare, share > 0, share < 1 else { return queued.popFirst() }
        return queued.popFirst(
            fairShare: HTTPOriginShares.limit(share: share, capacity: streams.count + 1),
            held: {
                var counts: [Int: Int] = [:]
                for running in streams.values { if let key = running.callerKey { counts[key, default: 0] += 1 } }
                return counts
            }, onFairShareWait: configuration.onFairShareWait)
    }

    func takeQueued() -> [HTTPClientExchange] {
        queued.takeAll()
    }

    func startQueued() {
        guard isActive, settingsReceived, !isGoingAway, !connection.isClosed else { return }
        var started = false
        while session.canOpenStream, let next = nextQueued() {
            start(next)
            started = true
        }
        if started { scheduleFlush() }
    }

    private func start(_ exchange: HTTPClientExchange) {
        let head = HTTP2RequestHead(exchange.requestHead, scheme: pool.origin.scheme)
        let hasBody = !exchange.body.isEmpty
        let streamsBody = exchange.streamedBody != nil
        let streamID: Int32
        do {
            streamID = try session.sendRequest(head: head, endStream: !hasBody && !streamsBody)
            if hasBody { try session.sendBody(streamID: streamID, bytes: exchange.body, endStream: true) }
        } catch {
            if error.kind == .streamsExhausted {
                goingAway(moving: [exchange])
            } else if error.isFatal {
                exchange.fail(.malformedResponse(reason: "HTTP/2 session failed: \(error.message)"))
                failConnection()
            } else {
                exchange.fail(.invalidURL("request cannot be sent over HTTP/2: \(error.message)"))
            }
            return
        }
        streams[streamID] = exchange
        streamsOpened += 1
        if let cap = configuration.maxRequestsPerConnection, streamsOpened >= cap { retireAtRequestCap() }
        if let connectDuration {
            exchange.connectDuration = connectDuration
            self.connectDuration = nil
        }
        exchange.lastSendProgress = EventLoop.now()
        if let due = exchange.responseDue() {
            exchange.timer = connection.loop.schedule(atNanoseconds: due) { [weak self, weak exchange] in
                self?.responseTimerFired(streamID, exchange)
            }
        }
        exchange.onCancel = { [weak self, weak exchange] in
            guard let self, let exchange else { return }
            self.abandon(streamID, exchange, with: .cancelled)
        }
        if exchange.upload != nil {
            if hasBody { exchange.upload?.queue(exchange.body.count, complete: true) }
            uploads[streamID] = exchange
        }
        if streamsBody {
            exchange.startBodyPump { [weak self, weak exchange] pump, event in
                guard let self, let exchange, self.streams[streamID] === exchange, exchange.bodyPump === pump else {
                    return
                }
                self.upload(event, from: pump, on: streamID, for: exchange)
            }
        }
    }

    /// The exchange is due (see ``HTTPClientExchange/responseDue()``): time out, or wait on when the request or the
    /// response moved since the timer was set.
    private func responseTimerFired(_ streamID: Int32, _ exchange: HTTPClientExchange?) {
        guard let exchange, streams[streamID] === exchange, let due = exchange.responseDue() else { return }
        if due > EventLoop.now() {
            exchange.timer = connection.loop.schedule(atNanoseconds: due) { [weak self, weak exchange] in
                self?.responseTimerFired(streamID, exchange)
            }
            return
        }
        abandon(streamID, exchange, with: exchange.responseStarted ? .responseBodyTimeout : .responseTimeout)
    }

    /// Queues a streamed body's chunk or end on its stream; the next chunk is pulled now, or on `.windowAvailable`
    /// once the stream's send queue is full.
    private func upload(
        _ event: RequestBodyPump.Event, from pump: RequestBodyPump, on streamID: Int32,
        for exchange: HTTPClientExchange
    ) {
        do {
            switch event {
            case .chunk(let chunk):
                // At its declared length the body ends the stream; the pump goes on only to check the stream ends.
                let complete = exchange.bodyQueued(chunk.count, now: EventLoop.now())
                let room = try session.sendBody(streamID: streamID, bytes: chunk, endStream: complete)
                exchange.pull(from: pump, roomForMore: room || complete)
            case .end:
                exchange.bodyPumpEnded()
                guard !exchange.isBodyComplete else { return }
                exchange.bodyComplete(now: EventLoop.now())
                try session.sendBody(streamID: streamID, bytes: [UInt8](), endStream: true)
            case .failed(let error):
                abandon(streamID, exchange, with: error)
                return
            }
        } catch {
            if error.isFatal {
                failConnection()
                return
            }
            // The stream is closing: its events (a response, a reset) settle the exchange.
            exchange.stopBodyPump()
        }
        scheduleFlush()
    }

    /// Reports the upload progress of streams whose body bytes the session handed out, and forgets finished ones.
    func reportUploads() {
        var done: [Int32] = []
        for (streamID, exchange) in uploads {
            guard streams[streamID] === exchange else {
                done.append(streamID)
                continue
            }
            let unsent = session.bufferedOutbound(streamID: streamID)
            exchange.upload?.update(unsent: unsent)
            if unsent == 0 && exchange.upload?.isComplete != false { done.append(streamID) }
        }
        for streamID in done { uploads.removeValue(forKey: streamID) }
    }

    /// Lets the server send as many body bytes again as `exchange` has passed on (WINDOW_UPDATE).
    func acknowledge(_ streamID: Int32, _ exchange: HTTPClientExchange) {
        guard exchange.unacknowledged > 0 else { return }
        session.consumed(streamID: streamID, count: exchange.unacknowledged)
        exchange.unacknowledged = 0
        scheduleFlush()
    }

    /// Ends `exchange` with `error` and resets its stream (CANCEL), leaving the connection to the other streams.
    func abandon(_ streamID: Int32, _ exchange: HTTPClientExchange, with error: HTTPClientError) {
        guard streams[streamID] === exchange else { return }
        streams.removeValue(forKey: streamID)
        exchange.fail(error)
        try? session.resetStream(streamID: streamID, errorCode: .cancel)
        scheduleFlush()
    }

    // MARK: Idle

    /// Closes the connection (GOAWAY) if it has carried no stream for `timeout`.
    func expireIfIdle(now: UInt64, timeout: Duration) {
        guard isActive, load == 0, !connection.isClosed, now &- idleSince > timeout.nanoseconds else { return }
        goingAway()
        try? session.goAway(graceful: false, errorCode: .noError)
        flush()
        connection.closeAfterFlush()
    }
}
