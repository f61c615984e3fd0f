import HTTPWire
import Locking
import NetCore

/// Serves HTTP/1.1 on one connection: parses requests, hands them to the handler, writes responses in order
/// (pipelining with a bounded queue), streams bodies with back-pressure both ways and enforces the timeouts.
///
/// Lives on its connection's loop thread.
final class HTTP1ServerConnection: HTTPServerConnectionHandler {
    /// One request's place in the response order; for a request answered later on the loop
    /// (``HTTPServerDecision/answerLater(context:)``), also its handler's responder.
    final class Slot: HTTPServerResponder {
        let isHead: Bool
        let version: HTTPVersion
        /// Not GET, HEAD, OPTIONS or TRACE: its handler starts only once every earlier response on the connection is
        /// complete, and later requests' handlers wait until its own is (RFC 9112 §9.3.2: only safe requests may be
        /// handled in parallel), so an upstream sees pipelined unsafe requests in order, one after the other.
        let isUnsafe: Bool
        /// A request waiting for its turn (see ``isUnsafe``): nothing was decided about it yet.
        var waiting: HTTPServerRequest?
        // Loop-confined like the connection; no access to these two calls out while in progress (the response is only
        // assigned, read or taken whole; `keepAlive` is never passed `inout`): no dynamic exclusivity check.
        @exclusivity(unchecked) var keepAlive: Bool
        @exclusivity(unchecked) var response: HTTPServerResponse?
        var writing = false
        var task: Task<Void, Never>?
        /// The status the server gave the request when its body failed (see ``HTTPServerRequest/bodyRejectionStatus``):
        /// the handler's answer goes out with it, or the server's own once ``failedAnswerGrace`` has passed.
        var failedStatus: Int?
        /// When the body failed (loop time, nanoseconds).
        var failedAt: UInt64 = 0
        // Loop-confined, and no access to these calls out while in progress (each is read, assigned or taken whole,
        // and a cancellation taken out is called after): no dynamic exclusivity check.
        /// A request answered later: the connection its answer goes to, until it is given.
        @exclusivity(unchecked) var answering: HTTP1ServerConnection?
        /// A request answered later, when the server compresses: what the compression of its answer looks at (set
        /// once `start` returned without answering).
        @exclusivity(unchecked) var compressedFor: HTTPRequestHead?
        @exclusivity(unchecked) var cancellation: (any HTTPServerCancellation)?
        @exclusivity(unchecked) private(set) var isCancelled = false

        func respond(_ response: consuming HTTPServerResponse) {
            guard let connection = answering.take() else { return }
            cancellation = nil
            if connection.startingHandler {
                // Answered from inside `start`: the slot is filled (and compressed once `start` returned), and the
                // connection writes it once the input at hand is processed, as it does an immediate answer.
                self.response = consume response
            } else if let request = compressedFor.take(), let compressor = connection.context.compressor {
                connection.complete(
                    self, with: compressor.compress(consume response, for: request, on: connection.connection.loop))
            } else {
                connection.complete(self, with: consume response)
            }
        }

        /// Whether a handler still works on the answer (a task, or work started for an answer given later).
        var isHandled: Bool { task != nil || answering != nil }

        /// Stops the handler answering this slot: its task, or the work started for an answer given later.
        func cancelHandler() {
            task?.cancel()
            guard answering != nil, !isCancelled else { return }
            isCancelled = true
            cancellation.take()?.cancel()
        }

        init(isHead: Bool, version: HTTPVersion, keepAlive: Bool, isUnsafe: Bool = false) {
            self.isHead = isHead
            self.version = version
            self.keepAlive = keepAlive
            self.isUnsafe = isUnsafe
        }
    }

    // State is loop-confined. Scalars, references only ever read or assigned whole, and the parser (whose mutations call
    // nothing outside it) skip the runtime's dynamic exclusivity check (see `Connection`). So does the slot array: it is
    // only changed by `append`, `removeFirst` (whose removed slot is let go of after the change) and `takeSlots()`
    // (likewise), none of which runs code outside the array while it changes, and every other use reads it.
    let connection: Connection
    private let context: HTTPServerLoopContext
    @exclusivity(unchecked) private var parser: HTTP1RequestParser
    @exclusivity(unchecked) private var slots: [Slot] = []
    @exclusivity(unchecked) private var currentBody: ByteStream?
    /// The slot of the request whose body `currentBody` is.
    private weak var bodySlot: Slot?
    /// The request being read was answered before its body was read: the rest of the body is read and dropped, so the
    /// connection can serve the next request.
    @exclusivity(unchecked) private var discardingBody = false
    /// The request being read asked for `100 Continue` and did not get it (it was pipelined): its client may never
    /// send the body, so an answer given before the body was read closes the connection instead of dropping a body
    /// that might be the next request (the "0.CL" desync).
    @exclusivity(unchecked) private var bodyAwaitsContinue = false
    /// A request was refused or its body failed: the client may still be sending, so the close lingers (see
    /// ``Connection/closeAfterFlush(lingering:)``).
    @exclusivity(unchecked) private var refusedInput = false
    @exclusivity(unchecked) private var processingPaused = false
    @exclusivity(unchecked) private var acceptingRequests = true
    @exclusivity(unchecked) private var peerFinished = false
    @exclusivity(unchecked) private var requestsStarted = 0
    /// The body writer waiting for the socket to drain. An unsafe continuation: an optional checked one (a type of the
    /// resilient concurrency library) is looked at through the runtime's generic witnesses, at every drained write.
    @exclusivity(unchecked) private var drainWaiter: UnsafeContinuation<Void, Never>?
    private let createdAt = EventLoop.now()
    @exclusivity(unchecked) private var active = false
    /// When the current request's first byte arrived (header timeout), 0 when none is being read.
    @exclusivity(unchecked) private var headStartedAt: UInt64 = 0
    @exclusivity(unchecked) private var lastBodyProgress: UInt64 = 0
    /// Request body bytes read (with their framing), being handed to a handler or dropped, for the minimum rate.
    @exclusivity(unchecked) private var bodyBytesRead = 0
    /// Whether responses keep up ``HTTPServerLimits/minSendRate`` while bytes wait in the socket's queue.
    @exclusivity(unchecked) private var sendRate = MinimumRate()
    /// Whether request bodies keep up ``HTTPServerLimits/minReceiveRate`` while the connection reads them.
    @exclusivity(unchecked) private var receiveRate = MinimumRate()
    /// When the minimum rates were last checked (loop time).
    @exclusivity(unchecked) private var lastRateCheck: UInt64 = 0
    @exclusivity(unchecked) private var lastActivity = EventLoop.now()
    @exclusivity(unchecked) private var draining = false
    /// The task that runs this connection's handlers one request after another (see ``HTTP1HandlerWorker``).
    @exclusivity(unchecked) private var worker: HTTP1HandlerWorker?
    /// The request that asked to switch protocols and waits for its answer: nothing past it is read until then.
    private weak var upgradeSlot: Slot?
    /// That request's ``HTTPServerRequest/upgradeInput``, fed once its answer is a 101.
    @exclusivity(unchecked) private var pendingUpgradeInput: ByteStream?
    /// After a 101: where the client's bytes go, as they are (the connection no longer speaks HTTP/1). Its reader
    /// falling behind pauses reading as a body's does (`processingPaused`), and its demand resumes it the same way.
    @exclusivity(unchecked) private var tunnelInput: ByteStream?

    init(connection: Connection, context: HTTPServerLoopContext) {
        self.connection = connection
        self.context = context
        let limits = context.limits
        self.parser = HTTP1RequestParser(
            limits: HTTP1ParserLimits(
                maxRequestLineBytes: limits.maxRequestLineBytes, maxHeaderBytes: limits.maxHeaderBytes,
                maxHeaders: limits.maxHeaders, maxBodyBytes: limits.maxBodyBytes))
    }

    var isIdle: Bool { slots.isEmpty && !parser.isMidRequest && currentBody == nil }

    // MARK: ConnectionDelegate

    func connectionDidBecomeActive(_ connection: Connection) {
        active = true
        lastActivity = EventLoop.now()
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        let now = connection.loop.roundTime
        lastActivity = now
        if let tunnelInput {
            if !tunnelInput.yield([UInt8](bytes)) {
                processingPaused = true
                connection.pauseReading()
            }
            return
        }
        if headStartedAt == 0 && currentBody == nil && !discardingBody { headStartedAt = now }
        if currentBody != nil || discardingBody {
            lastBodyProgress = now
            bodyBytesRead &+= bytes.count
        }
        guard acceptingRequests else { return }
        parser.append(bytes)
        processInput()
        if slots.first?.response != nil { writeReadyResponses() }
    }

    func connectionDidReadEOF(_ connection: Connection) {
        peerFinished = true
        if let tunnelInput {
            // The client is done sending; what the handler still streams goes on until it ends.
            tunnelInput.finish()
            return
        }
        let bodyCutShort = currentBody != nil
        if let body = currentBody {
            body.fail(ByteStreamError.aborted)
            currentBody = nil
        }
        if slots.isEmpty {
            connection.close()
        } else if context.limits.abandonsRequestsOnClientEOF && !bodyCutShort && !slots.contains(where: { $0.writing })
        {
            // Nothing is on its way to the client: closing cancels the handlers (see `connectionDidClose`). A body cut
            // short still gets its handler's answer (a 400, docs/reliability.md H1-40).
            connection.close()
        } else {
            acceptingRequests = false
            slots.last?.keepAlive = false
        }
    }

    func connectionDidDrainWrites(_ connection: Connection) {
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume()
        }
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        currentBody?.fail(ByteStreamError.aborted)
        currentBody = nil
        endUpgrade()
        for slot in slots { slot.cancelHandler() }
        _ = takeSlots()
        retireWorker()
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume()
        }
        context.connectionClosed(connection)
    }

    // MARK: Requests

    private func processInput() {
        while !processingPaused && acceptingRequests && !connection.isClosed {
            guard let event = parser.next() else { break }
            // Consumed, so that a head moves into its request instead of being copied.
            switch consume event {
            case .head(let head, let framing):
                startRequest(head, framing: framing)
            case .body(let bytes):
                guard let body = currentBody else { continue }
                if !body.yield(bytes) {
                    processingPaused = true
                    connection.pauseReading()
                }
            case .end:
                currentBody?.finish()
                currentBody = nil
                discardingBody = false
                headStartedAt = 0
                if let last = slots.last, !last.keepAlive { acceptingRequests = false }
            case .error(let error):
                if let body = currentBody {
                    currentBody = nil
                    body.fail(error.status == 413 ? ByteStreamError.tooLarge : ByteStreamError.malformed)
                    failRequestMidBody(status: error.status)
                } else if discardingBody {
                    // The body being dropped is malformed: its request has its answer; nothing more is read.
                    discardingBody = false
                    acceptingRequests = false
                    connection.closeAfterFlush(lingering: context.limits.lingeringClose)
                } else {
                    reject(status: error.status)
                }
            }
        }
    }

    private func startRequest(_ head: consuming HTTPRequestHead, framing: HTTP1BodyFraming) {
        requestsStarted += 1
        headStartedAt = 0
        let expect = head.headers.first(.expect)
        if let expect, !expect.equalsIgnoringASCIICase("100-continue") {
            reject(status: 417, head: head)
            return
        }
        let keepAlive = head.wantsKeepAlive && !draining && requestsStarted < context.limits.maxRequestsPerConnection
        let version = head.version
        // Methods are case-sensitive: one that does not start with `H` is not HEAD, and a GET is not compared as a
        // string (whose differing bits would take the comparison's slow path).
        let isHead = head.method.rawValue.utf8.first == UInt8(ascii: "H") && head.method == .head
        let isUnsafe = !head.method.isSafe
        let declaredLength: Int64?
        let body: ByteStream?
        let upgradeInput: ByteStream?
        switch framing {
        case .none:
            declaredLength = nil
            body = nil
            upgradeInput = head.requestedUpgrade != nil ? makeBodyStream() : nil
            if !keepAlive { acceptingRequests = false }
        case .contentLength(let length):
            declaredLength = length
            body = makeBodyStream()
            upgradeInput = nil
        case .chunked:
            declaredLength = nil
            body = makeBodyStream()
            upgradeInput = nil
        }
        let request = HTTPServerRequest.made(
            head: consume head, bodyStream: body, declaredBodyLength: declaredLength,
            remoteAddress: connection.remoteAddress, isTLS: connection.isTLS,
            loop: connection.loop, upgradeInput: upgradeInput)
        // An unsafe request behind others, or any request behind an unsafe one, waits for its turn (see
        // `Slot.isUnsafe`); nothing is decided about it until then.
        let waits = !slots.isEmpty && (isUnsafe || slots.contains { $0.isUnsafe })
        // Constants, so that the answer is borrowed where it is looked at and moved where it goes, never copied.
        let immediate: HTTPServerResponse?
        let handlerContext: (any AnyObject & Sendable)?
        var answersLater = false
        if waits {
            immediate = nil
            handlerContext = nil
        } else {
            switch context.decision(for: request) {
            case .respond(let response):
                // Looked at here, where it is bound from the decision: an `if let` of `immediate` copied it.
                if body == nil, slots.isEmpty, !response.body.isStream, !paces(response), response.head.status != 101,
                    response.fault == nil
                {
                    // Nothing ahead of it and nothing more to read or stream: written now, without a place in the
                    // queue.
                    upgradeInput?.finish()
                    var keepAlive = keepAlive
                    writeHeadAndBytes(response, version: version, isHead: isHead, keepAlive: &keepAlive)
                    if !keepAlive { finishConnection() }
                    return
                }
                immediate = response
                handlerContext = nil
            case .handle(let decided):
                immediate = nil
                handlerContext = decided
            case .answerLater(let decided):
                immediate = nil
                handlerContext = decided
                answersLater = true
            }
        }
        let slot = Slot(isHead: isHead, version: version, keepAlive: keepAlive, isUnsafe: isUnsafe)
        slots.append(slot)
        bodyAwaitsContinue = false
        if let body {
            currentBody = body
            bodySlot = slot
            lastBodyProgress = connection.loop.roundTime
            receiveRate.reset(total: bodyBytesRead)
            if expect != nil {  // `100-continue`: any other expectation was refused above
                if version >= .http1_1, slots.count == 1 {
                    connection.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                } else {
                    bodyAwaitsContinue = true
                }
            }
        }
        if let upgradeInput {
            // What follows may be the new protocol's: nothing more is parsed until the answer says which.
            upgradeSlot = slot
            pendingUpgradeInput = upgradeInput
            processingPaused = true
            connection.pauseReading()
        }
        if waits {
            slot.waiting = consume request
        } else if immediate != nil {
            // Written when the input at hand has been processed (see `connection(_:didRead:)`).
            slot.response = immediate
        } else if answersLater {
            startHandler(consume request, context: handlerContext, slot: slot)
        } else {
            dispatch(consume request, context: handlerContext, slot: slot)
        }
        if slots.count >= context.limits.maxPipelinedRequests {
            processingPaused = true
            connection.pauseReading()
        }
    }

    private func makeBodyStream() -> ByteStream {
        let loop = connection.loop
        let owner = UncheckedSendable(self)
        return ByteStream { loop.executeSoonOrNow { owner.value.bodyDemand() } }
    }

    /// A body's or a tunnel's reader wants more: reading goes on (a tunnel's bytes bypass `processInput`, which
    /// finds no request to parse).
    private func bodyDemand() {
        guard processingPaused, upgradeSlot == nil, slots.count < context.limits.maxPipelinedRequests,
            !connection.isClosed
        else { return }
        processingPaused = false
        connection.resumeReading()
        processInput()
    }

    /// Runs the handler for `request` on the connection's loop: in the connection's worker when it is free (or
    /// starts it, while the loop has fewer than its maximum), else in a task of its own. The answer fills `slot`.
    private func dispatch(
        _ request: consuming HTTPServerRequest, context handlerContext: (any AnyObject & Sendable)?,
        slot: Slot
    ) {
        let handler = context.handler
        // Moved, not copied, on its way to the worker.
        let job = HTTP1HandlerWorker.Job(request: request, context: handlerContext, slot: slot)
        if let worker {
            if worker.isWaiting {
                slot.task = worker.task
                worker.run(consume job)
                return
            }
        } else if context.handlerWorkers < HTTPServerLoopContext.maxHandlerWorkers {
            context.handlerWorkers += 1
            let owner = UncheckedSendable(self)
            let started = HTTP1HandlerWorker.start(
                first: consume job, handler: handler, compressor: context.compressor,
                loop: connection.loop
            ) {
                owner.value.complete($0, with: $1)
            }
            worker = started
            slot.task = started.task
            return
        }
        runInOwnTask(consume job, handler: handler)
    }

    /// Starts the handler's work for a request it answers later on the loop (``HTTPServerHandler/start(_:context:responder:)``);
    /// the slot is its responder.
    private func startHandler(
        _ request: consuming HTTPServerRequest, context handlerContext: (any AnyObject & Sendable)?, slot: Slot
    ) {
        slot.answering = self
        startingHandler = true
        context.handler.start(request, context: handlerContext, responder: slot)
        startingHandler = false
        guard let compressor = context.compressor else { return }
        // The request's head is kept for the compression of an answer still to come (not the whole request).
        if let answered = slot.response.take() {
            slot.response = compressor.compress(answered, for: request)
        } else if slot.answering != nil {
            slot.compressedFor = (consume request).head
        }
    }

    /// Set while a handler's `start` runs: an answer it gives at once fills its slot, to be written with the others.
    @exclusivity(unchecked) private var startingHandler = false

    /// Runs `job`'s handler in a task of its own (the worker is busy, or the loop has its maximum of workers).
    private func runInOwnTask(_ job: consuming HTTP1HandlerWorker.Job, handler: any HTTPServerHandler) {
        let job = job
        let owner = UncheckedSendable((self, job.slot))
        let loop = connection.loop
        let compressor = context.compressor
        job.slot.task = Task(executorPreference: loop) {
            let response = compressor.applied(
                to: await handler.handle(job.request, context: job.context), for: job.request)
            loop.executeSoonOrNow {
                let (connection, slot) = owner.value
                connection.complete(slot, with: response)
            }
        }
    }

    /// Starts the handlers whose turn has come, after a response was completed: the requests up to and including the
    /// first unsafe one still waiting, when every response ahead of that one is complete (see ``Slot/isUnsafe``).
    /// An answer given at once fills its slot; the caller writes the ready responses.
    private func startWaitingHandlers() {
        for (index, slot) in slots.enumerated() {
            if slot.isUnsafe && index > 0 { return }
            if let request = slot.waiting.take() {
                // A request whose body failed meanwhile has the server's answer already.
                if slot.response == nil {
                    switch context.decision(for: request) {
                    case .respond(let response): slot.response = response
                    case .handle(let decided): dispatch(request, context: decided, slot: slot)
                    case .answerLater(let decided): startHandler(request, context: decided, slot: slot)
                    }
                }
            }
            if slot.isUnsafe || connection.isClosed { return }
        }
    }

    /// Answers a request that cannot be served (parse error, bad expectation, timeout) with the handler's answer to
    /// the rejection, and closes after it.
    private func reject(status: Int, head: HTTPRequestHead? = nil) {
        acceptingRequests = false
        refusedInput = true
        // No head is being read any more: the header timeout must not refuse this connection again at every sweep
        // (each time logging another 408 and pausing the reads a lingering close needs to see the client leave).
        headStartedAt = 0
        connection.pauseReading()
        let slot = Slot(isHead: false, version: .http1_1, keepAlive: false)
        slot.response = HTTPServerRejection(
            status: status, head: head, remoteAddress: connection.remoteAddress,
            isTLS: connection.isTLS
        ).answer(from: context.handler)
        slots.append(slot)
        writeReadyResponses()
    }

    /// The body of the request being read turned out malformed, too long or too slow: that request gets `status`
    /// instead of its handler's status, unless its answer was already given; either way the connection closes after
    /// it. Its handler is cancelled and its answer to the failed body (which it sees fail, see
    /// ``HTTPServerRequest/bodyRejectionStatus``) is sent with `status`, so a handler that shapes its errors (request
    /// ids, logging) answers this one too; a handler that has not answered within ``failedAnswerGrace`` gets the
    /// server's ``HTTPServerRejection/defaultResponse``. One request never gets two responses.
    private func failRequestMidBody(status: Int) {
        acceptingRequests = false
        refusedInput = true
        connection.pauseReading()
        guard let slot = slots.last else {
            connection.closeAfterFlush(lingering: context.limits.lingeringClose)
            return
        }
        slot.keepAlive = false
        guard slot.response == nil else { return }
        slot.failedStatus = status
        slot.failedAt = connection.loop.roundTime
        guard slot.isHandled else { return answerFailedRequest(slot) }
        cancelTask(of: slot)
    }

    /// How long the server waits for a cancelled handler's answer to a request whose body failed.
    static let failedAnswerGrace: Duration = .seconds(1)

    /// Answers a request whose body failed with the server's own error, its handler not having answered.
    private func answerFailedRequest(_ slot: Slot) {
        guard slot.response == nil, let status = slot.failedStatus else { return }
        slot.response = HTTPServerRejection(status: status).defaultResponse
        writeReadyResponses()
    }

    private func complete(_ slot: Slot, with response: consuming HTTPServerResponse) {
        // A slot already answered by the connection itself (a body that failed mid-way) keeps that answer.
        guard !connection.isClosed, slot.response == nil else { return }
        if let status = slot.failedStatus {
            // The body failed: the handler's answer with the server's status, unless it would stream a body.
            guard !response.body.isStream else { return answerFailedRequest(slot) }
            var answer = response
            answer.head.replaceStatus(with: status)
            slot.response = answer
        } else {
            slot.response = response
        }
        slot.task = nil
        writeReadyResponses()
    }

    // MARK: Responses

    private func writeReadyResponses() {
        while true {
            // The response is taken out of its slot rather than copied; one whose body goes on being written is put
            // back (the slot stays answered until it ends).
            while let first = slots.first, !first.writing, let response = first.response.take() {
                if draining || response.closesConnection
                    || (bodyAwaitsContinue && first === bodySlot && currentBody != nil)
                {
                    first.keepAlive = false
                }
                let streaming = write(response, for: first)
                if streaming {
                    first.response = consume response
                    return
                }
                slots.removeFirst()
                if !first.keepAlive {
                    finishConnection()
                    return
                }
                discardBodyIfAnswered(first)
                startWaitingHandlers()
            }
            guard processingPaused, upgradeSlot == nil, tunnelInput == nil,
                currentBody == nil || currentBody?.isFinished == true,
                slots.count < context.limits.maxPipelinedRequests
            else { break }
            processingPaused = false
            connection.resumeReading()
            processInput()
            // Requests answered at once while processing are written in this same loop (no recursion).
            guard slots.first?.response != nil else { break }
        }
        if draining && isIdle { connection.closeAfterFlush() }
    }

    /// After `slot`'s response was written: if its request's body is still arriving, nobody will read the rest (the
    /// handler answered without it), so it is dropped as it arrives and the connection goes on with the next request
    /// (what nginx does), instead of stalling once the unread body fills the stream. A handler still reading sees the
    /// body end with ``ByteStreamError/aborted``.
    private func discardBodyIfAnswered(_ slot: Slot) {
        guard let body = currentBody, slot === bodySlot else { return }
        currentBody = nil
        bodySlot = nil
        discardingBody = true
        lastBodyProgress = connection.loop.roundTime
        body.fail(ByteStreamError.aborted)
    }

    private func finishConnection() {
        acceptingRequests = false
        // Unread input (a body still arriving or being dropped, a refused request's rest) must not turn the close into
        // a reset that could destroy the answer on its way: the close lingers.
        let peerMaySend = !peerFinished && (refusedInput || currentBody != nil || discardingBody)
        currentBody?.fail(ByteStreamError.aborted)
        currentBody = nil
        endUpgrade()
        for slot in slots { slot.cancelHandler() }
        _ = takeSlots()
        retireWorker()
        if resetsOnClose {
            connection.reset()
        } else {
            connection.closeAfterFlush(lingering: peerMaySend ? context.limits.lingeringClose : nil)
        }
    }

    /// Set by a response whose fault is a reset (``HTTPServerResponseFault/reset``): the connection ends with a TCP RST.
    private var resetsOnClose = false

    /// Empties the slot array and returns what it held, so that the slots are let go of (and whatever their release
    /// runs, such as a stream's `onRelease`) only once the array is no longer being changed.
    private func takeSlots() -> [Slot] {
        var taken: [Slot] = []
        swap(&taken, &slots)
        return taken
    }

    /// Cancels the handler answering `slot`. When that is the worker, it is retired: a cancelled task cannot run the
    /// next request.
    private func cancelTask(of slot: Slot) {
        guard let task = slot.task else { return slot.cancelHandler() }
        task.cancel()
        slot.task = nil
        if let worker, worker.task == task { retireWorker() }
    }

    private func retireWorker() {
        guard let worker else { return }
        worker.retire()
        self.worker = nil
        context.handlerWorkers -= 1
    }

    /// Writes `response`; returns true when its body goes on being written (the slot stays first until it ends).
    private func write(_ response: HTTPServerResponse, for slot: Slot) -> Bool {
        if slot === upgradeSlot {
            upgradeSlot = nil
            let input = pendingUpgradeInput
            pendingUpgradeInput = nil
            if response.head.status == 101, case .stream(let outbound) = response.body, let input {
                return switchProtocols(response.headWithRequestID, outbound: outbound, input: input, slot: slot)
            }
            input?.finish()
        }
        if let fault = response.fault {
            // A deliberate failure (a stub's fault): none of the answer goes out, and the connection ends.
            slot.keepAlive = false
            switch fault {
            case .reset: resetsOnClose = true
            case .close: break
            case .raw(let bytes): connection.write(bytes)
            }
            return false
        }
        if response.head.status == 101 {
            // Only an upgrade request answered with a stream can switch; any other 101 is the handler's mistake.
            slot.keepAlive = false
            return write(HTTPServerRejection(status: 500).defaultResponse, for: slot)
        }
        var keepAlive = slot.keepAlive
        let remaining = writeHeadAndBytes(
            response, version: slot.version, isHead: slot.isHead, keepAlive: &keepAlive)
        slot.keepAlive = keepAlive
        guard let remaining else { return false }
        slot.writing = true
        let owner = UncheckedSendable((self, slot, remaining))
        Task(executorPreference: connection.loop) {
            let (server, slot, remaining) = owner.value
            switch remaining {
            case .stream(let stream, let chunked): await server.pump(stream, chunked: chunked, slot: slot)
            case .paced(let bytes): await server.pace(bytes, slot: slot)
            }
        }
        return true
    }

    /// Answers the upgrade request of `slot` with `head` (a 101) and from then on relays bytes as they are: `outbound`
    /// to the client, unframed, and the client's bytes (those already read past the request first) to `input`. The
    /// connection closes when `outbound` ends. Returns true: the slot stays first while the stream is written.
    private func switchProtocols(_ head: HTTPResponseHead, outbound: ByteStream, input: ByteStream, slot: Slot) -> Bool
    {
        var output: [UInt8] = []
        do {
            try HTTP1ResponseHeadWriter.writeSwitchingProtocols(
                head, dateFieldLine: context.dateCache.currentFieldLine,
                into: &output)
        } catch {
            input.finish()
            slot.keepAlive = false
            return write(HTTPServerRejection(status: 500).defaultResponse, for: slot)
        }
        connection.write(output)
        slot.keepAlive = false
        slot.writing = true
        acceptingRequests = false
        tunnelInput = input
        // Reading stays paused (since the request) while the bytes read past it fill the reader's buffer.
        let early = parser.takeBufferedBytes()
        if early.isEmpty || input.yield(early) {
            processingPaused = false
            connection.resumeReading()
        }
        if peerFinished { input.finish() }
        let owner = UncheckedSendable((self, slot))
        Task(executorPreference: connection.loop) {
            let (server, slot) = owner.value
            await server.pump(outbound, chunked: false, slot: slot)
        }
        return true
    }

    /// The connection ends: an upgrade request waiting for its answer, or a tunnel, gets no more client bytes.
    private func endUpgrade() {
        pendingUpgradeInput?.fail(ByteStreamError.aborted)
        pendingUpgradeInput = nil
        tunnelInput?.fail(ByteStreamError.aborted)
        tunnelInput = nil
    }

    /// A body still to write once its head is out.
    private enum RemainingBody {
        /// Streamed, chunked or not.
        case stream(ByteStream, chunked: Bool)
        /// Held in memory but written as the socket drains (see ``paces(_:)``).
        case paced([UInt8])
    }

    /// Whether `response`'s body, held in memory, is written as the socket drains rather than all at once: a large one
    /// over TLS, whose encrypted copy would otherwise be made whole, once per connection (a coalesced call's body
    /// is shared by all of its callers; only the cleartext can be queued as it is).
    private func paces(_ response: HTTPServerResponse) -> Bool {
        guard connection.isTLS, case .bytes(let body) = response.body else { return false }
        return body.count > Self.pacedChunkBytes
    }

    /// The piece of a paced body encrypted at a time.
    static let pacedChunkBytes = 64 * 1024

    /// Writes `response`'s head, and its body when it is held in memory and not paced; returns the body still to
    /// write, when there is one. `keepAlive` comes back false when the response ends the connection.
    @discardableResult
    private func writeHeadAndBytes(
        _ response: HTTPServerResponse, version: HTTPVersion, isHead: Bool, keepAlive: inout Bool
    ) -> RemainingBody? {
        var framing = HTTP1ResponseHeadWriter.Framing.none
        var output: [UInt8]
        if case .bytes(let body) = response.body, body.count <= Self.bodyCopiedIntoHead {
            output = connection.outputBuffer(reservingCapacity: 256 + body.count)
        } else {
            output = connection.outputBuffer(reservingCapacity: 256)
        }
        do {
            framing = try HTTP1ResponseHeadWriter.write(
                response, version: version, isHead: isHead,
                keepAlive: &keepAlive, dateFieldLine: context.dateCache.currentFieldLine,
                into: &output)
        } catch {
            output.removeAll()
            keepAlive = false
            let fallback = HTTPResponseHead(status: 500, headers: ["Content-Length": "0", "Connection": "close"])
            try? HTTP1Serializer.writeResponseHead(fallback, into: &output)
            connection.write(output)
            return nil
        }
        // The framing and the body are looked at one after the other: a tuple of the two would copy the body.
        switch framing {
        case .bytes:
            guard case .bytes(let body) = response.body else { break }
            if paces(response) {
                connection.write(output)
                return .paced(body)
            }
            if body.count <= Self.bodyCopiedIntoHead {
                output.append(contentsOf: body)
                connection.write(output)
            } else {
                // Queued as it is, beside the head (one gathered send all the same): a body shared by many responses
                // (a coalesced call's) is not copied once per connection.
                connection.write(output)
                connection.write(body)
            }
            return nil
        case .stream(let isChunked):
            guard case .stream(let body) = response.body else { break }
            connection.write(output)
            return .stream(body, chunked: isChunked)
        case .none:
            break
        }
        connection.write(output)
        return nil
    }

    /// The largest byte body copied into the buffer of its head; a larger one is queued as it is.
    static let bodyCopiedIntoHead = 16 * 1024

    /// Copies a streamed body to the socket, waiting for the socket to drain above the high-water mark.
    private func pump(_ stream: ByteStream, chunked: Bool, slot: Slot) async {
        do {
            while let chunk = try await stream.next() {
                guard await send(chunk, chunked: chunked) else { return }
            }
        } catch {
            // The body failed part-way: close without the end marker so the client never sees it as complete.
            connection.close(error: error)
            return
        }
        finishBody(chunked: chunked, slot: slot)
    }

    /// Writes a body held in memory a piece at a time, as the socket drains (see ``paces(_:)``).
    private func pace(_ body: [UInt8], slot: Slot) async {
        var offset = 0
        while offset < body.count {
            let end = min(offset + Self.pacedChunkBytes, body.count)
            guard await send(Array(body[offset..<end]), chunked: false) else { return }
            offset = end
        }
        finishBody(chunked: false, slot: slot)
    }

    /// Writes one piece of a body, then waits while more than the high-water mark is queued; false when the
    /// connection closed.
    private func send(_ chunk: [UInt8], chunked: Bool) async -> Bool {
        if connection.isClosed { return false }
        if chunked {
            var framed: [UInt8] = []
            framed.reserveCapacity(chunk.count + 16)
            chunk.withUnsafeBytes { HTTP1Serializer.writeChunk($0, into: &framed) }
            connection.write(framed)
        } else {
            connection.write(chunk)
        }
        lastActivity = connection.loop.roundTime
        if connection.pendingWriteBytes > 256 * 1024 {
            await withUnsafeContinuation { drainWaiter = $0 }
        }
        return true
    }

    /// Ends a body written by ``pump(_:chunked:slot:)`` or ``pace(_:slot:)`` and moves on to the next response.
    private func finishBody(chunked: Bool, slot: Slot) {
        if connection.isClosed { return }
        if chunked {
            var last: [UInt8] = []
            HTTP1Serializer.writeLastChunk(into: &last)
            connection.write(last)
        }
        slot.writing = false
        if slots.first === slot { slots.removeFirst() }
        if !slot.keepAlive {
            finishConnection()
            return
        }
        discardBodyIfAnswered(slot)
        startWaitingHandlers()
        writeReadyResponses()
    }

    // MARK: Timeouts and drain

    /// Checks the connection's deadlines; called by the loop's sweep.
    func checkTimeouts(now: UInt64) {
        let limits = context.limits
        if worker?.sweep() == true { retireWorker() }
        if !active {
            if now &- createdAt > context.handshakeTimeout.nanoseconds { connection.close() }
            return
        }
        if let failed = slots.last, failed.failedStatus != nil, failed.response == nil,
            now &- failed.failedAt > Self.failedAnswerGrace.nanoseconds
        {
            answerFailedRequest(failed)
        }
        if checkMinimumRates(now: now, limits: limits) { return }
        if connection.pendingWriteBytes > 0 {
            if now &- connection.lastWriteProgress > limits.sendTimeout.nanoseconds { connection.close() }
            return
        }
        if currentBody != nil {
            if processingPaused {
                // Not reading: its handler has not taken what came yet. The pause is not the client's.
                lastBodyProgress = now
            } else if now &- lastBodyProgress > limits.bodyTimeout.nanoseconds {
                timeOutRequest()
            }
            return
        }
        if discardingBody {
            // Its request is answered: a stalled body just ends the connection.
            if now &- lastBodyProgress > limits.bodyTimeout.nanoseconds { connection.close() }
            return
        }
        if headStartedAt != 0 && slots.isEmpty {
            if now &- headStartedAt > limits.headerTimeout.nanoseconds { timeOutRequest() }
            return
        }
        if isIdle && now &- lastActivity > limits.idleTimeout.nanoseconds {
            connection.close()
        }
    }

    /// Checks the minimum rates (``HTTPServerLimits/minSendRate``, ``HTTPServerLimits/minReceiveRate``) since the last
    /// sweep; true when the connection was cut. A response counts while bytes wait in the socket's queue (the client
    /// does not take them as fast as they come); a body while the connection reads it (not while it is paused for its
    /// handler). A slow reader's connection is reset (its kernel buffers are freed at once); a slow body gets 408, or
    /// ends the connection when its request was answered already.
    private func checkMinimumRates(now: UInt64, limits: HTTPServerLimits) -> Bool {
        let elapsed = lastRateCheck == 0 ? 0 : now &- lastRateCheck
        lastRateCheck = now
        if sendRate.check(
            total: connection.bytesSent, waiting: connection.pendingWriteBytes > 0, elapsed: elapsed,
            rate: limits.minSendRate, window: limits.minRateWindow)
        {
            context.events.minimumRateCut?(.send, .http1_1)
            connection.reset()
            return true
        }
        let reading = (currentBody != nil || discardingBody) && !processingPaused
        if receiveRate.check(
            total: bodyBytesRead, waiting: reading, elapsed: elapsed, rate: limits.minReceiveRate,
            window: limits.minRateWindow)
        {
            context.events.minimumRateCut?(.receive, .http1_1)
            receiveRate.reset(total: bodyBytesRead)
            if currentBody != nil {
                timeOutRequest()
            } else {
                connection.close()
            }
            return true
        }
        return false
    }

    /// The request head (no slot yet) or the body being read (its request's slot is the last) took too long: 408,
    /// unless that request was answered already, then close.
    private func timeOutRequest() {
        currentBody?.fail(ByteStreamError.timedOut)
        currentBody = nil
        if slots.isEmpty {
            reject(status: 408)
        } else {
            failRequestMidBody(status: 408)
        }
    }

    /// Stops taking new requests: idle connections close now, busy ones after their current responses.
    func beginDrain() {
        draining = true
        if isIdle {
            connection.closeAfterFlush()
        } else {
            slots.last?.keepAlive = false
        }
    }
}
