import HTTPWire
import Locking
import NetCore

/// One request/response exchange as it moves through a pool and onto a connection. Loop thread only.
final class HTTPClientExchange: EventLoopJob {
    /// How the response reaches the caller. Unchecked continuations: the exchange resumes one exactly once (the
    /// delivery is cleared as it is resumed), and a checked one costs an allocation per request. Unchecked `Sendable`:
    /// a continuation is, and a ``callback(threshold:_:)`` is made on the loop that calls it and never leaves it.
    enum Delivery: @unchecked Sendable {
        /// All of it at the end (`execute`).
        case collected(UnsafeContinuation<HTTPClientResponse, any Error>)
        /// The head as soon as it arrives, the body as a back-pressured ``ByteStream`` (`execute(streaming:)`).
        case streamed(UnsafeContinuation<HTTPClientStreamingResponse, any Error>)
        /// Collected when the head declares a body of at most `threshold` bytes, else streamed
        /// (`execute(_:streamingBodiesLongerThan:)`).
        case collectedOrStreamed(threshold: Int, UnsafeContinuation<HTTPClientResponseOrStream, any Error>)
        /// To a closure on the loop, in a job of its own (never from inside the connection's event): collected, or
        /// with a `threshold`, streamed past it as `collectedOrStreamed` is (``HTTPClient/start(_:streamingBodiesLongerThan:deadline:timeout:completion:)``).
        case callback(threshold: Int?, HTTPClientCompletion)
    }

    // Loop-confined state skips dynamic exclusivity checks (see `Connection`): scalars and references only read or
    // assigned whole, and values mutated in place by code that cannot reach the exchange meanwhile (the response body
    // appended to; the upload progress, whose callback is the caller's and reaches the exchange only through
    // `loop.execute`, which runs after the current event).
    let request: HTTPClientRequest
    /// Who the request is sent for (``HTTPClientRequest/callerKey``), for the fair share of a full pool.
    let callerKey: Int?
    /// Set once the exchange has been passed over for its caller's share (counted once).
    @exclusivity(unchecked) var passedOverForShare = false
    /// The length of the body sent with the head (`body`'s, or the streamed body's); nil when it is streamed without
    /// one (chunked).
    let bodyLength: Int64?
    /// The body sent with the head in one write (empty for none).
    let body: [UInt8]
    /// A body sent as it is produced (stream or file), instead of `body`.
    let streamedBody: StreamedRequestBody?
    /// For a request to switch protocols (``HTTPClientRequest/Body/upgrade(_:)``): the bytes sent after a 101.
    @exclusivity(unchecked) var upgradeBody: StreamedRequestBody?
    /// The server answered the upgrade with 101: the connection carries the new protocol's bytes both ways.
    @exclusivity(unchecked) var switchedProtocols = false
    /// After a 101: the longest time with no bytes either way, instead of the response timeout.
    @exclusivity(unchecked) var tunnelIdleTimeout: Duration?
    let progress: HTTPClientProgress
    /// The client's settings the exchange reads, copied one by one: a copy of the whole configuration costs a
    /// reference count per string and array in it.
    private let maxWaitTime: Duration?
    private let responseTimeout: Duration?
    private let decompression: HTTPClient.Configuration.Decompression?
    let loop: EventLoop
    /// When the exchange was made (``EventLoop/now()``): its timings count from here.
    let startedAt: UInt64
    let deadline: UInt64?
    @exclusivity(unchecked) private var delivery: Delivery?
    /// Streamed delivery: the body handed to the caller, until it ends.
    @exclusivity(unchecked) private var bodyStream: ByteStream?
    /// Whether the body goes to the caller as a stream (for `collectedOrStreamed`, decided at the head).
    @exclusivity(unchecked) private(set) var isStreamed = false
    /// Whether the body is collected whatever its size, so the collected-body limit applies.
    @exclusivity(unchecked) private(set) var limitsCollectedBody = false
    /// Whether ``begin(delivering:)`` ran.
    @exclusivity(unchecked) private var begun = false
    /// The caller cancelled before ``begin(delivering:)``: beginning fails the exchange instead.
    @exclusivity(unchecked) private var cancelledBeforeBegin = false
    /// Streamed delivery: set by the connection, called on the loop when the caller has drained the body below its
    /// low-water mark (resume reading, or acknowledge HTTP/2 DATA).
    @exclusivity(unchecked) var onBodyDemand: (() -> Void)?
    /// HTTP/2 streamed delivery: DATA bytes received and not yet acknowledged to the server.
    @exclusivity(unchecked) var unacknowledged = 0
    @exclusivity(unchecked) var responseHead: HTTPResponseHead?
    @exclusivity(unchecked) var responseBody: [UInt8] = []
    @exclusivity(unchecked) var responseStarted = false
    @exclusivity(unchecked) var connectDuration: Duration?
    @exclusivity(unchecked) var firstByteAt: UInt64 = 0
    /// Addresses of the origin that could not be connected to for this exchange (see `HTTPOriginPool.failsOver`).
    @exclusivity(unchecked) var failedAddresses = 0
    /// Set once the exchange has been retried on a fresh connection.
    @exclusivity(unchecked) var retried = false
    /// Times the exchange was moved to another HTTP/2 connection because the server did not process it (GOAWAY,
    /// REFUSED_STREAM).
    @exclusivity(unchecked) var unprocessedRetries = 0
    /// Forces a new connection (used for the retry).
    @exclusivity(unchecked) var requiresFreshConnection = false
    @exclusivity(unchecked) var timer: LoopTimer?
    /// How to stop the exchange once it is under way (see ``cancel()``), when a closure is needed.
    @exclusivity(unchecked) var onCancel: (() -> Void)?
    /// The HTTP/1 connection running the exchange: cancelling closes it. Set by the connection when it sends the
    /// exchange and cleared when it lets go of it, so the reference is strong without keeping either alive after. Not
    /// `weak`: a weak reference gives the connection a side table, which slows every retain and release of it; not an
    /// ``onCancel`` closure, which would cost an allocation per request.
    @exclusivity(unchecked) var http1Connection: HTTP1ClientConnection?
    /// When the exchange stops waiting in a pool or connection queue: the earlier of the wait limit and the deadline.
    @exclusivity(unchecked) var waitExpiry: UInt64 = .max
    /// When request bytes last went out (the head, or body progress): the response timeout counts from here.
    @exclusivity(unchecked) var lastSendProgress: UInt64 = 0
    /// When the response last moved: its head or body bytes arrived, or a streamed body's reader caught up.
    @exclusivity(unchecked) var lastReceiveProgress: UInt64 = 0
    /// A streamed body's reader is behind: reading waits for it, so the server is not the one keeping the response.
    @exclusivity(unchecked) var waitingForReader = false
    /// Upload progress, when the caller asked for it and there is a body.
    @exclusivity(unchecked) var upload: UploadProgress?
    /// The pump of the current attempt's streamed body, until it delivered the body's end or the attempt ended.
    @exclusivity(unchecked) private(set) var bodyPump: RequestBodyPump?
    /// The pump holds a chunk back until the connection has room (write queue drained, HTTP/2 window available).
    @exclusivity(unchecked) var bodyPumpPaused = false
    /// Streamed body bytes this attempt gave to the connection or session.
    @exclusivity(unchecked) private(set) var bodyBytesQueued: Int64 = 0
    /// Whether this attempt gave all of the streamed body (its declared length, or its end when it has none).
    @exclusivity(unchecked) private(set) var isBodyComplete = false
    /// Whether a stream body has been pulled from: it cannot be sent again.
    @exclusivity(unchecked) private var streamConsumed = false

    /// The client that sent the exchange, kept alive while the exchange is under way and, for a streamed response,
    /// while its body is (``HTTPClientStreamingResponse`` holds it too): a client released meanwhile closes its
    /// connections, busy ones included, when it goes.
    private let client: AnyObject?

    /// Made on the caller's thread before the exchange is handed to `loop` (so the caller's cancellation handler can
    /// reach it without a shared box); from ``begin(delivering:)`` on, only `loop` touches it.
    init(
        request: consuming HTTPClientRequest, body: [UInt8], streamedBody: StreamedRequestBody?,
        progress: HTTPClientProgress, configuration: HTTPClient.Configuration, loop: EventLoop,
        startedAt: UInt64, deadline: UInt64?, client: AnyObject? = nil
    ) {
        self.client = client
        self.callerKey = request.callerKey
        self.request = consume request
        self.bodyLength = streamedBody.map { $0.length } ?? Int64(body.count)
        self.body = body
        self.streamedBody = streamedBody
        self.progress = progress
        self.maxWaitTime = configuration.maxWaitTime
        self.responseTimeout = configuration.responseTimeout
        self.decompression = configuration.decompression
        self.loop = loop
        self.startedAt = startedAt
        self.deadline = deadline
        if let report = progress.upload, streamedBody != nil || !body.isEmpty {
            upload = UploadProgress(callback: report, total: bodyLength)
        }
    }

    deinit { bodyPump?.stop() }

    /// Takes the caller's continuation, on the loop. Returns false, having failed it, when the caller cancelled first.
    func begin(delivering delivery: consuming Delivery) -> Bool {
        begun = true
        switch delivery {
        case .streamed: isStreamed = true
        case .collected, .callback(nil, _): limitsCollectedBody = true
        default: break
        }
        self.delivery = consume delivery
        guard !cancelledBeforeBegin else {
            fail(.cancelled)
            return false
        }
        return true
    }

    /// Whether the request can be sent again on another connection: no body, bytes, a file, or a stream nobody has
    /// pulled from yet.
    var canResend: Bool { !streamConsumed }

    /// Starts this attempt's pump for `streamedBody` (sending it from its start), or for `upgradeBody` once the
    /// protocols switched; `onEvent` runs on the loop.
    func startBodyPump(_ onEvent: @escaping (RequestBodyPump, RequestBodyPump.Event) -> Void) {
        guard let streamedBody = switchedProtocols ? upgradeBody : streamedBody else { return }
        bodyPump?.stop()
        if !streamedBody.isReplayable { streamConsumed = true }
        upload?.restart()
        bodyPumpPaused = false
        bodyBytesQueued = 0
        isBodyComplete = false
        bodyPump = RequestBodyPump.start(streamedBody, loop: loop, pullsOnLoop: switchedProtocols, onEvent: onEvent)
    }

    /// Stops pulling the streamed body (the attempt ended, or the server does not want the rest).
    func stopBodyPump() {
        bodyPump?.stop()
        bodyPump = nil
        bodyPumpPaused = false
    }

    /// Whether a streamed body is still being sent (not all of it handed over yet).
    var isSendingBody: Bool { bodyPump != nil && !isBodyComplete }

    /// `count` more streamed body bytes went to the connection or session. Returns true when they complete the body
    /// (its declared length is reached; the pump goes on only to check that the stream ends there).
    func bodyQueued(_ count: Int, now: UInt64) -> Bool {
        bodyBytesQueued += Int64(count)
        lastSendProgress = now
        upload?.queue(count)
        guard let length = streamedBody?.length, bodyBytesQueued >= length else { return false }
        bodyComplete(now: now)
        return true
    }

    /// All of the streamed body was handed over.
    func bodyComplete(now: UInt64) {
        isBodyComplete = true
        bodyPumpPaused = false
        upload?.complete()
        lastSendProgress = now
    }

    /// Asks `pump` for the next chunk when the transport has room for it, else pauses it until the transport drains.
    func pull(from pump: RequestBodyPump, roomForMore: Bool) {
        if roomForMore { pump.requestMore() } else { bodyPumpPaused = true }
    }

    /// The pump delivered the body's end and stopped.
    func bodyPumpEnded() {
        bodyPump = nil
        bodyPumpPaused = false
    }

    /// Whether the caller has its result: the whole response, an error, or the end of a streamed body.
    var isFinished: Bool { delivery == nil && bodyStream == nil }

    /// For a response collected or streamed by size: decides from its head (before ``headReceived()``). A body the
    /// head declares short enough, or a response without a body, is collected.
    func chooseDelivery(for head: HTTPResponseHead) {
        guard let threshold = streamingThreshold else { return }
        if request.method == .head || head.status == 204 || head.status == 304 { return }
        if let length = head.headers.first(.contentLength).flatMap({ Int($0) }), length <= threshold { return }
        isStreamed = true
    }

    /// ``chooseDelivery(for:)`` from an HTTP/1 response's framing, as the parser validated it: no body (a response to
    /// HEAD, a 204 or a 304) or a length within the threshold is collected, with no field to look up again.
    func chooseDelivery(for framing: HTTP1ResponseBodyFraming) {
        guard let threshold = streamingThreshold else { return }
        switch framing {
        case .none: return
        case .contentLength(let length) where length <= Int64(threshold): return
        default: isStreamed = true
        }
    }

    /// The body length past which a delivery decided at the head streams the body; nil for the others.
    private var streamingThreshold: Int? {
        switch delivery {
        case .collectedOrStreamed(let threshold, _): return threshold
        case .callback(let threshold, _): return threshold
        default: return nil
        }
    }

    /// The response head is in `responseHead`: a streamed delivery hands it to the caller now.
    func headReceived() {
        guard isStreamed, let delivery, let head = responseHead else { return }
        self.delivery = nil
        let owner = UncheckedSendable(self)
        let loop = self.loop
        let stream = ByteStream {
            loop.execute {
                let exchange = owner.value
                exchange.waitingForReader = false
                exchange.lastReceiveProgress = loop.roundTime
                exchange.onBodyDemand?()
            }
        }
        bodyStream = stream
        let firstByte = Duration.nanoseconds(
            Int64(clamping: (firstByteAt == 0 ? EventLoop.now() : firstByteAt) &- startedAt))
        let timings = HTTPClientTimings(connect: connectDuration, firstByte: firstByte, total: firstByte)
        let response = HTTPClientStreamingResponse(head: head, body: stream, timings: timings, client: client) {
            loop.execute {
                let exchange = owner.value
                guard exchange.bodyStream != nil else { return }
                exchange.cancel()
            }
        }
        switch delivery {
        case .streamed(let continuation): continuation.resume(returning: response)
        case .collectedOrStreamed(_, let continuation): continuation.resume(returning: .streamed(response))
        case .callback(_, let completion): call(completion, with: .success(.streamed(response)))
        case .collected: break
        }
    }

    /// Takes response body bytes. Returns false when a streamed body's consumer is behind: stop reading until
    /// `onBodyDemand`.
    func receive(_ bytes: [UInt8]) -> Bool {
        if let bodyStream {
            let wantsMore = bodyStream.yield(bytes)
            if !wantsMore { waitingForReader = true }
            return wantsMore
        }
        // A body that arrives in one piece is kept as it came, not copied into a second array.
        if responseBody.isEmpty { responseBody = bytes } else { responseBody.append(contentsOf: bytes) }
        return true
    }

    /// Body bytes received so far (collected, or counted for progress when streamed).
    @exclusivity(unchecked) private(set) var receivedBodyBytes: Int64 = 0

    /// Counts body bytes for progress and limits.
    func countBody(_ count: Int) -> Int64 {
        receivedBodyBytes += Int64(count)
        return receivedBodyBytes
    }

    /// The exchange starts waiting for a connection or an HTTP/2 stream.
    func startWaiting(now: UInt64) {
        let limit = maxWaitTime.map { now.addingSaturated($0.nanoseconds) } ?? .max
        waitExpiry = min(limit, deadline ?? .max)
    }

    /// Fails a waiting exchange whose wait expired: ``HTTPClientError/responseTimeout`` when its deadline passed,
    /// else ``HTTPClientError/poolWaitTimeout``. Returns whether it did.
    func expireWait(now: UInt64) -> Bool {
        guard !isFinished, now >= waitExpiry else { return false }
        if let deadline, now >= deadline {
            fail(.responseTimeout)
        } else {
            fail(.poolWaitTimeout)
        }
        return true
    }

    /// When the exchange times out if nothing moves: the earliest of the overall deadline (until the response is
    /// complete, body included) and the response timeout, counted before the head from the last request progress
    /// (so a long upload that keeps moving does not time out) and after it from the last response bytes (so a
    /// server that stalls mid-body is not waited for forever). While a streamed body's reader is the one behind, the
    /// response timeout counts from now: the timer keeps coming back, and holds again once the reader catches up.
    func responseDue() -> UInt64? {
        // After a 101 the deadline has done its work (the head arrived); bytes either way keep the tunnel open.
        var result = switchedProtocols ? nil : deadline
        if let timeout = switchedProtocols ? tunnelIdleTimeout ?? responseTimeout : responseTimeout {
            var since =
                responseHead == nil ? lastSendProgress : (waitingForReader ? EventLoop.now() : lastReceiveProgress)
            if switchedProtocols { since = max(since, lastSendProgress) }
            let candidate = since.addingSaturated(timeout.nanoseconds)
            result = min(result ?? candidate, candidate)
        }
        return result
    }

    /// Stops the exchange on behalf of its caller (task cancellation, a dropped response stream): through the
    /// connection running it, which decides what becomes of the connection, else by failing it.
    func cancel() {
        if !begun {
            cancelledBeforeBegin = true
        } else if let connection = http1Connection {
            connection.cancel(self)
        } else if let onCancel {
            onCancel()
        } else {
            fail(.cancelled)
        }
    }

    func succeed() {
        timer?.cancel()
        stopBodyPump()
        if upload?.isComplete == true { upload?.update(unsent: 0) }
        if let bodyStream {
            self.bodyStream = nil
            bodyStream.finish()
            return
        }
        // The head and body are taken out of the exchange, which is done with them, and the response goes to its
        // continuation as it was made: nothing of it is copied (a `map` over a result, or `resume(with:)`, which
        // borrows its result, would copy the response).
        guard delivery != nil, !isStreamed, let head = responseHead.take() else { return }
        switch delivery {
        case .collected(let continuation):
            do throws(HTTPClientError) {
                continuation.resume(returning: try collectedResponse(head: consume head))
            } catch {
                continuation.resume(throwing: error)
            }
        case .collectedOrStreamed(_, let continuation):
            do throws(HTTPClientError) {
                continuation.resume(returning: .collected(try collectedResponse(head: consume head)))
            } catch {
                continuation.resume(throwing: error)
            }
        case .callback(_, let completion):
            do throws(HTTPClientError) {
                call(completion, with: .success(.collected(try collectedResponse(head: consume head))))
            } catch {
                call(completion, with: .failure(error))
            }
        case .streamed, nil: return
        }
        delivery = nil
    }

    /// The whole response, with the body collected so far (taken out of the exchange), decoded as configured, timings
    /// taken now.
    private func collectedResponse(head: consuming HTTPResponseHead) throws(HTTPClientError) -> HTTPClientResponse {
        var body: [UInt8] = []
        swap(&body, &responseBody)
        if let limits = decompression, request.method != .head,
            let value = head.headers.first(.contentEncoding),
            case let coding = ContentCoding(rawValue: String(Substring(value).trimmingHTTPWhitespace())),
            coding == .gzip || coding == .deflate
        {
            do {
                body = try Inflater.decompress(body, maxOutputBytes: limits.maxBytes, maxRatio: limits.maxRatio)
                head.headers.remove(name: "Content-Encoding")
                head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
            } catch CompressionError.limitExceeded {
                throw .decompressionLimitExceeded
            } catch {
                throw .malformedResponse(reason: "undecodable \(coding) body")
            }
        }
        let now = EventLoop.now()
        let timings = HTTPClientTimings(
            connect: connectDuration,
            firstByte: .nanoseconds(Int64(clamping: (firstByteAt == 0 ? now : firstByteAt) &- startedAt)),
            total: .nanoseconds(Int64(clamping: now &- startedAt)))
        return HTTPClientResponse(head: head, body: body, timings: timings)
    }

    func fail(_ error: HTTPClientError) {
        timer?.cancel()
        stopBodyPump()
        if let bodyStream {
            self.bodyStream = nil
            bodyStream.fail(error)
            return
        }
        switch delivery {
        case .collected(let continuation): continuation.resume(throwing: error)
        case .streamed(let continuation): continuation.resume(throwing: error)
        case .collectedOrStreamed(_, let continuation): continuation.resume(throwing: error)
        case .callback(_, let completion): call(completion, with: .failure(error))
        case nil: return
        }
        delivery = nil
    }

    /// A callback delivery's completion and result, held until its job runs (two optionals: an optional tuple of
    /// them is copied through run-time tuple metadata).
    @exclusivity(unchecked) private var pendingCompletion: HTTPClientCompletion?
    @exclusivity(unchecked) private var pendingResult: Result<HTTPClientResponseOrStream, HTTPClientError>?

    /// Calls `completion` with `result` in a job of its own on the loop, as a continuation's task would resume: the
    /// connection that finished the exchange is done with its event (and back in its pool) by then.
    private func call(
        _ completion: @escaping HTTPClientCompletion,
        with result: consuming Result<HTTPClientResponseOrStream, HTTPClientError>
    ) {
        pendingCompletion = completion
        pendingResult = consume result
        loop.executeLocally(job: self)
    }

    func runOnLoop() {
        guard let completion = pendingCompletion.take(), let result = pendingResult.take() else { return }
        completion(consume result)
    }
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` when that overflows (a far deadline, not one in the past).
    func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
