import HTTP2Transport
import HTTPWire
import Locking
import NetCore

/// Serves HTTP/2 on one connection with an ``HTTP2Session`` (nghttp2) in server mode: every request stream goes to
/// the same ``HTTPServerHandler`` as HTTP/1.1, bodies flow with real back-pressure both ways, reset streams cancel
/// their handler, and drain, idle and send timeouts end the connection with GOAWAY.
///
/// - Input: bytes are fed to the session, then its events are handled, then its output is written in one write.
/// - Request bodies: DATA is acknowledged to the peer (`consumed`) only once the handler has taken it from the
///   request's ``ByteStream``, so a slow handler closes the peer's flow-control window.
/// - Responses: the head and body go through `sendResponse`/`sendBody`; a streamed body waits for
///   `.windowAvailable` whenever the stream's queue is full.
/// - Work in flight: at most `maxConcurrentStreams` handler tasks run per connection, counting tasks of reset
///   streams until they have actually finished; requests beyond that are refused with REFUSED_STREAM. A request's
///   handler starts once the read burst it came in has been processed (in the same loop round, so no later), so a
///   stream opened and reset in one burst never starts one; a client that cancels streams faster than they complete
///   is told GOAWAY by the session (``HTTPWire/HTTP2ResetBudget``).
/// - Minimum rates: a response held behind a window the client keeps (nearly) shut, and a request body that trickles
///   in, are cut below ``HTTPServerLimits/minSendRate`` and ``HTTPServerLimits/minReceiveRate``.
///
/// Lives on its connection's loop thread.
final class HTTP2ServerConnection: HTTPServerConnectionHandler, HTTP2Connection {
    /// One request stream.
    final class Stream {
        let id: Int32
        let isHead: Bool
        /// What runs the handler and the response: a worker of the loop's pool, or a task of its own.
        var worker: HTTP2StreamWorker?
        var task: Task<Void, Never>?
        /// The request body while the peer is still sending it.
        var body: ByteStream?
        var bodyBytes: Int64 = 0
        /// The request's `content-length`, if it has one.
        var declaredLength: Int64?
        /// Body bytes handed to `body` that the handler has not taken yet (not acknowledged to the peer).
        var pendingAck = 0
        /// Request body bytes are acknowledged and dropped (the response is complete or was made by us).
        var discardBody = false
        var lastBodyProgress: UInt64
        /// The response head was submitted.
        var responded = false
        /// Reset or closed: nothing more is sent and the handler's result is dropped.
        var finished = false
        /// The status the server gave the request when its body went over the limit: the handler's answer goes out
        /// with it, or the server's own once ``HTTP1ServerConnection/failedAnswerGrace`` has passed.
        var failedStatus: Int?
        var failedAt: UInt64 = 0
        /// The response pump waiting for the peer's window; resumed with false when the stream ends.
        var windowWaiter: CheckedContinuation<Bool, Never>?
        /// An extended CONNECT (RFC 8441) until it is refused: its DATA frames are the tunnel's bytes (the request's
        /// ``HTTPServerRequest/upgradeInput``), with no body limit and no body timeout.
        var isTunnel = false
        /// Send-stall tracking: outbound bytes queued at the last sweep and since when they have not moved.
        var stalledBuffered = 0
        var stalledSince: UInt64 = 0
        /// Whether the response keeps up ``HTTPServerLimits/minSendRate`` while the stream's window holds it back.
        var sendRate = MinimumRate()
        /// Whether the request body keeps up ``HTTPServerLimits/minReceiveRate`` while the client may send it.
        var receiveRate = MinimumRate()
        /// The request was held back (the client cancels streams faster than they complete): it starts when released.
        var held = false

        init(id: Int32, isHead: Bool, now: UInt64) {
            self.id = id
            self.isHead = isHead
            self.lastBodyProgress = now
        }
    }

    let connection: Connection
    private let context: HTTPServerLoopContext
    let session: HTTP2Session
    private var streams: [Int32: Stream] = [:]
    /// Handler tasks started and not finished yet (including those of reset streams), and requests waiting to start
    /// theirs (see ``arrived``).
    private var runningTasks = 0
    /// Requests that arrived in the read burst at hand: their handlers start once it has been processed (see
    /// ``dispatchArrived()``).
    private var arrived: [(request: HTTPServerRequest, stream: Stream)] = []
    /// Whether ``dispatchArrived()`` is scheduled.
    private var dispatchScheduled = false
    /// Requests held back for ``heldStreamDelay`` because the client has cancelled as many more streams than it let
    /// complete as its budget allows (``HTTPWire/HTTP2Session/holdsNewStreams``), and the timer that releases them.
    private var held: [(request: HTTPServerRequest, stream: Stream)] = []
    private var holdTimer: LoopTimer?
    /// How long a new stream of such a client waits before its handler starts: a stream it cancels at once starts
    /// nothing, and that cancellation ends the connection (GOAWAY); one it lets run is served that much later.
    static let heldStreamDelay: Duration = .milliseconds(100)
    /// Whether responses keep up ``HTTPServerLimits/minSendRate`` while bytes wait in the socket's queue, and while the
    /// connection's window holds every stream back.
    private var socketSendRate = MinimumRate()
    private var windowSendRate = MinimumRate()
    /// When the minimum rates were last checked (loop time).
    private var lastRateCheck: UInt64 = 0
    private let maxRunningTasks: Int
    var flushScheduled = false
    private var lastActivity = EventLoop.now()
    private var peerFinished = false
    private var draining = false
    private var finalGoAwaySent = false
    private var drainTimer: LoopTimer?
    private var closing = false
    /// The most of an unread, declared request body let in (and dropped) after a complete response rather than
    /// stopped with a reset (see ``responseComplete(_:)``).
    static let drainedBodyAllowance: Int64 = 64 * 1024
    /// Delay between the GOAWAY shutdown notice and the final GOAWAY (about a round trip).
    static let drainNoticeDelay: Duration = .milliseconds(250)

    init(connection: Connection, context: HTTPServerLoopContext) throws {
        self.connection = connection
        self.context = context
        self.session = try HTTP2Session(role: .server, settings: context.http2SessionSettings)
        self.maxRunningTasks = max(1, Int(context.http2Settings.maxConcurrentStreams))
    }

    // MARK: ConnectionDelegate

    func connectionDidBecomeActive(_ connection: Connection) {
        lastActivity = EventLoop.now()
        flush()
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !closing else { return }
        receive(bytes)
    }

    func connectionDidReadEOF(_ connection: Connection) {
        peerFinished = true
        // An HTTP/2 client ends a stream with END_STREAM, never with a TCP half-close: an EOF means it has gone.
        if streams.isEmpty || context.limits.abandonsRequestsOnClientEOF {
            connection.close()
        }
    }

    func connectionDidDrainWrites(_ connection: Connection) {
        writesDrained()
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        closing = true
        drainTimer?.cancel()
        drainTimer = nil
        holdTimer?.cancel()
        holdTimer = nil
        held.removeAll()
        for stream in streams.values { end(stream) }
        streams.removeAll()
        context.connectionClosed(connection)
    }

    // MARK: Output (HTTP2Connection: `flush`, `scheduleFlush`)

    /// A client that has gone (EOF) is done with once its last stream has ended.
    var closesWhenFlushed: Bool { peerFinished && streams.isEmpty }

    func closeAfterOutput() {
        // A client told GOAWAY for its behaviour may still be sending: the close lingers, so that it reads why.
        closeAfterFlush(lingering: session.abuseGoAway != nil)
    }

    /// Closes once the output is written; `lingering`: the client may still be sending (a flood), so the connection
    /// reads and drops its bytes for a while rather than resetting under the last frames (see
    /// ``NetCore/Connection/closeAfterFlush(lingering:)``).
    private func closeAfterFlush(lingering: Bool = false) {
        guard !closing else { return }
        closing = true
        connection.closeAfterFlush(lingering: lingering && !peerFinished ? context.limits.lingeringClose : nil)
    }

    /// A fatal session error: write what the session has (it may hold a GOAWAY), and a GOAWAY naming the error when
    /// the session sent none (a CONTINUATION or acknowledgement flood), then close. The close lingers, so that a
    /// client still sending reads the GOAWAY, unless the client does not read at all (an acknowledgement flood: the
    /// answers to its SETTINGS or PINGs piled up unread), which would only keep the connection open for nothing.
    func sessionFailed(_ error: HTTP2Error) {
        var output = remainingOutput()
        output.append(contentsOf: session.goAwayFrame(after: error))
        connection.write(output)
        closeAfterFlush(lingering: error.kind != .flooded)
    }

    // MARK: Events

    /// Handles the session's events; returns whether there were any.
    @discardableResult
    func processEvents() -> Bool {
        var any = false
        while let event = session.nextEvent() {
            any = true
            switch event {
            case .request(let streamID, let head, let endStream):
                startRequest(streamID: streamID, head: head, endStream: endStream)
            case .requestBody(let streamID, let bytes):
                receiveBody(streamID: streamID, bytes: bytes)
            case .requestEnd(let streamID):
                if let stream = streams[streamID] {
                    stream.body?.finish()
                    stream.body = nil
                }
            case .streamReset(let streamID, _):
                if let stream = streams[streamID] { end(stream) }
            case .streamClosed(let streamID):
                if let stream = streams.removeValue(forKey: streamID) { end(stream) }
                lastActivity = connection.loop.roundTime
                streamsChanged()
            case .windowAvailable(let streamID):
                if let stream = streams[streamID], let waiter = stream.windowWaiter {
                    stream.windowWaiter = nil
                    waiter.resume(returning: true)
                }
            case .goaway, .trailers, .remoteSettingsChanged, .response, .responseBody, .responseEnd:
                break
            }
        }
        return any
    }

    /// The stream is over (reset or closed): cancel its handler, abort its body, stop its response.
    private func end(_ stream: Stream) {
        stream.finished = true
        cancelHandler(of: stream)
        stream.body?.fail(ByteStreamError.aborted)
        stream.body = nil
        if let waiter = stream.windowWaiter {
            stream.windowWaiter = nil
            waiter.resume(returning: false)
        }
    }

    private func streamsChanged() {
        guard streams.isEmpty else { return }
        if draining && !finalGoAwaySent { sendFinalGoAway() }
    }

    // MARK: Requests

    private func startRequest(streamID: Int32, head h2Head: HTTP2RequestHead, endStream: Bool) {
        let now = EventLoop.now()
        lastActivity = now
        let stream = Stream(id: streamID, isHead: h2Head.method == .head, now: now)
        streams[streamID] = stream
        guard runningTasks < maxRunningTasks else {
            // Handlers of reset streams are still running: refuse until they finish (retry-safe for the client).
            stream.finished = true
            try? session.resetStream(streamID: streamID, errorCode: .refusedStream)
            return
        }
        var head: HTTPRequestHead
        do {
            head = try h2Head.toHTTP1Request()
        } catch {
            stream.finished = true
            try? session.resetStream(streamID: streamID, errorCode: .protocolError)
            return
        }
        head.version = .http2
        if h2Head.method == .connect, let tunnelProtocol = h2Head.extendedProtocol {
            guard context.http2Settings.enableConnectProtocol else {
                stream.finished = true
                try? session.resetStream(streamID: streamID, errorCode: .protocolError)
                return
            }
            startTunnelRequest(stream, head: Self.upgradeHandshake(head, to: tunnelProtocol), endStream: endStream)
            return
        }
        let declaredLength = head.headers.first(name: "Content-Length").flatMap { Int64($0) }
        stream.declaredLength = declaredLength
        if let declaredLength, declaredLength > context.limits.maxBodyBytes {
            stream.discardBody = true
            let rejection = HTTPServerRejection(
                status: 413, head: head, remoteAddress: connection.remoteAddress,
                isTLS: connection.isTLS)
            respondDirectly(stream, with: rejection.answer(from: context.handler))
            if !endStream { try? session.stopRequestAfterResponse(streamID: streamID) }
            return
        }
        let body: ByteStream
        if endStream {
            body = ByteStream.complete([])
        } else {
            body = makeBodyStream(streamID: streamID)
            stream.body = body
        }
        let request = HTTPServerRequest(
            head: head, body: body, declaredBodyLength: declaredLength,
            remoteAddress: connection.remoteAddress, isTLS: connection.isTLS,
            loop: connection.loop)
        enqueue(request, stream: stream)
    }

    /// The HTTP/1.1 handshake an extended CONNECT stands for (RFC 8441 §5): a GET asking to upgrade to `tunnelProtocol`,
    /// so that a handler sees one kind of upgrade request whichever version the client speaks.
    static func upgradeHandshake(_ connect: HTTPRequestHead, to tunnelProtocol: String) -> HTTPRequestHead {
        var head = connect
        head.method = .get
        head.headers.remove(name: "Content-Length")
        head.headers.replaceOrAdd(name: "Connection", value: "Upgrade")
        head.headers.replaceOrAdd(name: "Upgrade", value: tunnelProtocol)
        return head
    }

    /// Hands an extended CONNECT to the handler as an upgrade request: the stream's DATA frames feed its
    /// ``HTTPServerRequest/upgradeInput`` (held, unacknowledged, until the handler reads them), and a 101 answer with
    /// a streamed body opens the tunnel (see ``startResponse(_:with:)``).
    private func startTunnelRequest(_ stream: Stream, head: HTTPRequestHead, endStream: Bool) {
        stream.isTunnel = true
        let input: ByteStream
        if endStream {
            input = ByteStream.complete([])
        } else {
            input = makeBodyStream(streamID: stream.id)
            stream.body = input
        }
        var request = HTTPServerRequest(
            head: head, body: ByteStream.complete([]), declaredBodyLength: nil,
            remoteAddress: connection.remoteAddress, isTLS: connection.isTLS,
            loop: connection.loop)
        request.upgradeInput = input
        enqueue(request, stream: stream)
    }

    /// A body stream that buffers nothing on its own: a chunk is either taken by a waiting handler at once
    /// (acknowledged then) or held until the handler takes it, when `onDemand` acknowledges it.
    private func makeBodyStream(streamID: Int32) -> ByteStream {
        let loop = connection.loop
        let owner = UncheckedSendable(self)
        return ByteStream(highWaterMark: 0, lowWaterMark: 0) {
            loop.executeSoonOrNow { owner.value.bodyTaken(streamID: streamID) }
        }
    }

    /// The handler has taken every chunk handed to the body so far: let the peer send that much more.
    private func bodyTaken(streamID: Int32) {
        guard let stream = streams[streamID], stream.pendingAck > 0 else { return }
        session.consumed(streamID: streamID, count: stream.pendingAck)
        stream.pendingAck = 0
        scheduleFlush()
    }

    private func receiveBody(streamID: Int32, bytes: [UInt8]) {
        guard let stream = streams[streamID], !stream.discardBody, let body = stream.body else {
            session.consumed(streamID: streamID, count: bytes.count)
            if let stream = streams[streamID], !stream.finished {
                // Dropped bytes still count: a client may not upload without end after its response.
                stream.bodyBytes += Int64(bytes.count)
                stream.lastBodyProgress = connection.loop.roundTime
                // A body over the limit waiting for its handler's answer keeps being dropped until it is sent.
                if stream.bodyBytes > context.limits.maxBodyBytes && (stream.failedStatus == nil || stream.responded) {
                    end(stream)
                    if stream.responded {
                        // It has its answer (a 413): stop the upload without losing the answer (RFC 9113 §8.1).
                        try? session.stopRequestAfterResponse(streamID: streamID)
                    } else {
                        try? session.resetStream(streamID: streamID, errorCode: .cancel)
                    }
                }
            }
            return
        }
        stream.lastBodyProgress = connection.loop.roundTime
        lastActivity = stream.lastBodyProgress
        stream.bodyBytes += Int64(bytes.count)
        if stream.bodyBytes > context.limits.maxBodyBytes && !stream.isTunnel {
            body.fail(ByteStreamError.tooLarge)
            stream.body = nil
            cancelHandler(of: stream)
            stream.discardBody = true
            session.consumed(streamID: streamID, count: bytes.count + stream.pendingAck)
            stream.pendingAck = 0
            if !stream.responded {
                // The cancelled handler's answer to its failed body goes out with 413 (see `startResponse`).
                stream.failedStatus = 413
                stream.failedAt = connection.loop.roundTime
            } else {
                stream.finished = true
                try? session.resetStream(streamID: streamID, errorCode: .cancel)
            }
            return
        }
        if body.yield(bytes) {
            session.consumed(streamID: streamID, count: bytes.count)
        } else {
            stream.pendingAck += bytes.count
        }
    }

    /// Holds `request` until the read burst it came in has been processed (``dispatchArrived()``, later in the same
    /// loop round): a stream the client resets meanwhile, in the same packet or the next, starts no work. Its place
    /// counts against the handlers a connection may run from now on.
    private func enqueue(_ request: HTTPServerRequest, stream: Stream) {
        runningTasks += 1
        arrived.append((request, stream))
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        connection.loop.executeLocally { [self] in dispatchArrived() }
    }

    /// Starts the handlers of the requests that arrived, except those of streams already over; holds them back
    /// first while the client cancels streams faster than they complete.
    private func dispatchArrived() {
        dispatchScheduled = false
        let ready = arrived
        arrived.removeAll()
        for (request, stream) in ready {
            guard !stream.finished, !connection.isClosed else {
                runningTasks -= 1
                continue
            }
            if session.holdsNewStreams && !stream.held {
                stream.held = true
                held.append((request, stream))
                continue
            }
            dispatch(request, stream: stream)
        }
        if !held.isEmpty && holdTimer == nil {
            holdTimer = connection.loop.schedule(after: Self.heldStreamDelay) { [weak self] in
                guard let self else { return }
                holdTimer = nil
                arrived.append(contentsOf: held)
                held.removeAll()
                dispatchArrived()
            }
        }
    }

    /// Runs the handler of `request` (its place in ``runningTasks`` is taken already).
    private func dispatch(_ request: HTTPServerRequest, stream: Stream) {
        let handler = context.handler
        let compressor = context.compressor
        let owner = UncheckedSendable((self, stream))
        let handlerContext: (any AnyObject & Sendable)?
        switch context.decision(for: request) {
        case .respond(let response):
            guard let body = startResponse(stream, with: response) else {
                runningTasks -= 1
                return
            }
            run(stream) {
                let (server, stream) = owner.value
                await server.finishResponse(stream, streaming: body)
                server.taskFinished(stream)
            }
            return
        case .handle(let decided):
            handlerContext = decided
        }
        run(stream) {
            let response = compressor.applied(to: await handler.handle(request, context: handlerContext), for: request)
            // Back on the loop (the task prefers it as executor).
            let (server, stream) = owner.value
            await server.respond(stream, with: response)
            server.taskFinished(stream)
        }
    }

    /// Runs a stream's job on a worker of the loop's pool, or in a task of its own when the pool has none to spare.
    private func run(_ stream: Stream, _ job: @escaping HTTP2StreamWorker.Job) {
        if let worker = context.runOnStreamWorker(job) {
            stream.worker = worker
        } else {
            stream.task = Task(executorPreference: connection.loop, operation: job)
        }
    }

    private func cancelHandler(of stream: Stream) {
        stream.worker?.cancel()
        stream.task?.cancel()
    }

    /// Runs at the end of a stream's job, on the loop: the worker is free for another stream from now on.
    private func taskFinished(_ stream: Stream) {
        runningTasks -= 1
        stream.worker = nil
        stream.task = nil
    }

    /// Answers a request the server refuses itself (413) with a JSON error.
    private func respondDirectly(_ stream: Stream, status: Int) {
        respondDirectly(stream, with: HTTPServerRejection(status: status).defaultResponse)
    }

    /// A request whose body failed, its handler not having answered in time: the server's own error.
    private func answerFailedRequest(_ stream: Stream) {
        guard let status = stream.failedStatus, !stream.responded, !stream.finished else { return }
        respondDirectly(stream, status: status)
    }

    /// Answers with `response`, a body of bytes (a rejection's answer), whatever the handler is doing.
    private func respondDirectly(_ stream: Stream, with response: HTTPServerResponse) {
        stream.responded = true
        let body: [UInt8]
        if case .bytes(let bytes) = response.body { body = bytes } else { body = [] }
        var headers = HTTPFields()
        for field in response.head.headers where !field.name.equalsIgnoringASCIICase("content-length") {
            headers.add(name: field.name.lowercased(), value: field.value)
        }
        headers.add(name: "content-length", value: String(body.count))
        headers.add(name: "date", value: context.dateCache.current)
        let head = HTTPResponseHead(status: response.head.status, version: .http2, headers: headers)
        do {
            try session.sendResponse(streamID: stream.id, head: head, endStream: false)
            try session.sendBody(streamID: stream.id, bytes: body, endStream: true)
        } catch {
            sendFailed(stream, error)
        }
        scheduleFlush()
    }

    // MARK: Responses

    /// Sends the handler's response on `stream`; streams the body with back-pressure. Runs on the loop.
    private func respond(_ stream: Stream, with response: HTTPServerResponse) async {
        guard let body = startResponse(stream, with: response) else { return }
        await finishResponse(stream, streaming: body)
    }

    /// Pumps a streamed body, then completes the stream.
    private func finishResponse(_ stream: Stream, streaming body: ByteStream) async {
        await pump(body, to: stream)
        if !stream.finished { responseComplete(stream) }
    }

    /// Sends the head and a whole body; returns a body that still has to be streamed (see ``finishResponse``), or nil
    /// when the response is complete (or could not be sent).
    private func startResponse(_ stream: Stream, with response: HTTPServerResponse) -> ByteStream? {
        guard !stream.finished, !stream.responded, !connection.isClosed else { return nil }
        if let status = stream.failedStatus {
            // The body failed: the handler's answer with the server's status, unless it would stream a body.
            guard !response.body.isStream else {
                answerFailedRequest(stream)
                return nil
            }
            var answer = response
            answer.head.replaceStatus(with: status)
            stream.failedStatus = nil
            return startResponse(stream, with: answer)
        }
        stream.responded = true
        if let fault = response.fault {
            // A deliberate failure (a stub's fault): this stream only is reset, the connection goes on.
            stream.finished = true
            try? session.resetStream(streamID: stream.id, errorCode: fault.http2ErrorCode)
            scheduleFlush()
            return nil
        }
        let response = stream.isTunnel ? tunnelAnswer(stream, response) : response
        var head = response.head
        head.version = .http2
        for name in ["Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Proxy-Connection"] {
            head.headers.remove(name: name)
        }
        if !head.headers.contains(name: "Date") { head.headers.add(name: "Date", value: context.dateCache.current) }
        if !(200...999).contains(head.status) {
            // Interim or invalid status as a final response: nothing sensible to send.
            head = HTTPResponseHead(status: 502, version: .http2, headers: ["Date": context.dateCache.current])
        }
        let bodyAllowed = !stream.isHead && !head.statusForbidsBody
        var bytes: [UInt8] = []
        var bodyStream: ByteStream?
        switch head.statusForbidsBody ? HTTPServerResponse.Body.none : response.body {
        case .none:
            if !head.statusForbidsBody && !stream.isHead && !head.headers.contains(name: "Content-Length") {
                head.headers.add(name: "Content-Length", value: "0")
            }
        case .bytes(let body):
            head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
            if bodyAllowed { bytes = body }
        case .stream(let body):
            if bodyAllowed { bodyStream = body }
        }
        if head.statusForbidsBody { head.headers.remove(name: "Content-Length") }
        let endStream = bytes.isEmpty && bodyStream == nil
        do {
            try session.sendResponse(streamID: stream.id, head: head, endStream: endStream)
            if !bytes.isEmpty { try session.sendBody(streamID: stream.id, bytes: bytes, endStream: true) }
        } catch {
            sendFailed(stream, error)
            return nil
        }
        lastActivity = connection.loop.roundTime
        scheduleFlush()
        if let bodyStream { return bodyStream }
        if !stream.finished { responseComplete(stream) }
        return nil
    }

    /// The answer to an extended CONNECT. A 101 with a streamed body opens the tunnel: the client gets `200` (RFC 8441
    /// §5) without the HTTP/1.1 handshake's `Sec-WebSocket-Accept`, then the body's bytes as DATA while its own DATA
    /// goes on to the request's `upgradeInput`. Any other answer refuses it and goes out as it is, except a 2xx, which
    /// would tell the client its tunnel is open when no handler took it: that is answered 501. A refused tunnel's
    /// input is an ordinary body from then on, dropped once the answer is complete.
    private func tunnelAnswer(_ stream: Stream, _ response: HTTPServerResponse) -> HTTPServerResponse {
        var answer = response
        if response.head.status == 101, response.body.isStream {
            answer.head.replaceStatus(with: 200)
            answer.head.headers.remove(name: "Sec-WebSocket-Accept")
            answer.head.headers.remove(name: "Content-Length")
            return answer
        }
        stream.isTunnel = false
        guard (200...299).contains(response.head.status) else { return answer }
        return HTTPServerResponse(head: HTTPResponseHead(status: 501, version: .http2))
    }

    /// Copies a streamed response body into the session, pausing while the stream's queue is full.
    private func pump(_ body: ByteStream, to stream: Stream) async {
        do {
            while let chunk = try await body.next() {
                if stream.finished || connection.isClosed { return }
                let more = try session.sendBody(streamID: stream.id, bytes: chunk, endStream: false)
                lastActivity = connection.loop.roundTime
                scheduleFlush()
                if !more {
                    let resumed = await withCheckedContinuation { stream.windowWaiter = $0 }
                    if !resumed { return }
                }
            }
            if stream.finished || connection.isClosed { return }
            try session.sendBody(streamID: stream.id, bytes: [UInt8](), endStream: true)
            scheduleFlush()
        } catch let error as HTTP2Error {
            sendFailed(stream, error)
        } catch {
            // The body failed part-way: reset so the client never takes it as complete.
            guard !stream.finished, !connection.isClosed else { return }
            stream.finished = true
            try? session.resetStream(streamID: stream.id, errorCode: .internalError)
            scheduleFlush()
        }
    }

    /// The whole response is queued. A request body still arriving is no longer wanted: acknowledge and drop what
    /// came, and ask the client to stop sending with RST_STREAM NO_ERROR once the response has ended (RFC 9113 §8.1;
    /// a client such as curl otherwise waits to finish an upload nobody reads). A declared rest of at most
    /// ``drainedBodyAllowance`` is let in and dropped instead: clients such as curl before 8 take that reset for an
    /// error and drop the answer (a 413, a 401) with it. A rest that stops coming ends the stream at the body timeout.
    private func responseComplete(_ stream: Stream) {
        guard let body = stream.body else { return }
        body.fail(ByteStreamError.aborted)
        stream.body = nil
        stream.discardBody = true
        if let declared = stream.declaredLength, declared - stream.bodyBytes <= Self.drainedBodyAllowance {
            stream.lastBodyProgress = connection.loop.roundTime
        } else {
            try? session.stopRequestAfterResponse(streamID: stream.id)
        }
        if stream.pendingAck > 0 {
            session.consumed(streamID: stream.id, count: stream.pendingAck)
            stream.pendingAck = 0
            scheduleFlush()
        }
    }

    private func sendFailed(_ stream: Stream, _ error: HTTP2Error) {
        if error.isFatal {
            sessionFailed(error)
            return
        }
        guard !stream.finished else { return }
        stream.finished = true
        try? session.resetStream(streamID: stream.id, errorCode: .internalError)
        scheduleFlush()
    }

    // MARK: Timeouts and drain

    /// Checks the connection's deadlines; called by the loop's sweep.
    func checkTimeouts(now: UInt64) {
        guard !connection.isClosed else { return }
        let limits = context.limits
        if connection.pendingWriteBytes > 0 && now &- connection.lastWriteProgress > limits.sendTimeout.nanoseconds {
            connection.close()
            return
        }
        let elapsed = lastRateCheck == 0 ? 0 : now &- lastRateCheck
        lastRateCheck = now
        if checkConnectionSendRate(elapsed: elapsed, limits: limits) { return }
        let socketClear = connection.pendingWriteBytes == 0
        let connectionWindowOpen = session.sendWindow().connection > 0
        var changed = false
        for stream in Array(streams.values) where !stream.finished {
            if checkMinimumRates(
                stream, elapsed: elapsed, limits: limits,
                windowsMatter: socketClear && connectionWindowOpen)
            {
                changed = true
                continue
            }
            if stream.failedStatus != nil && !stream.responded
                && now &- stream.failedAt > HTTP1ServerConnection.failedAnswerGrace.nanoseconds
            {
                answerFailedRequest(stream)
                changed = true
                continue
            }
            // A body that stopped arriving although the window is open.
            if stream.body != nil && !stream.isTunnel && stream.pendingAck == 0
                && now &- stream.lastBodyProgress > limits.bodyTimeout.nanoseconds
            {
                end(stream)
                try? session.resetStream(streamID: stream.id, errorCode: .cancel)
                changed = true
                continue
            }
            // The rest of an answered request's body, let in to be dropped, that stopped coming.
            if stream.discardBody && stream.responded && stream.body == nil
                && now &- stream.lastBodyProgress > limits.bodyTimeout.nanoseconds
            {
                end(stream)
                try? session.stopRequestAfterResponse(streamID: stream.id)
                changed = true
                continue
            }
            // A response the peer does not take (its window stays shut).
            let buffered = session.bufferedOutbound(streamID: stream.id)
            if buffered == 0 || buffered != stream.stalledBuffered {
                stream.stalledBuffered = buffered
                stream.stalledSince = now
            } else if now &- stream.stalledSince > limits.sendTimeout.nanoseconds {
                end(stream)
                try? session.resetStream(streamID: stream.id, errorCode: .cancel)
                changed = true
            }
        }
        if changed { flush() }
        if streams.isEmpty && runningTasks == 0 && now &- lastActivity > limits.idleTimeout.nanoseconds {
            try? session.goAway(graceful: false, errorCode: .noError)
            flush()
            closeAfterFlush()
        }
    }

    /// The connection-wide minimum send rate: bytes waiting in the socket's queue (the client does not read the socket
    /// fast enough: the connection is reset, freeing its buffers at once), or every stream held back by the
    /// connection's flow-control window, which the client keeps (nearly) shut (GOAWAY(ENHANCE_YOUR_CALM), then
    /// close). True when the connection was cut.
    private func checkConnectionSendRate(elapsed: UInt64, limits: HTTPServerLimits) -> Bool {
        let socketBacked = connection.pendingWriteBytes > 0
        if socketSendRate.check(
            total: connection.bytesSent, waiting: socketBacked, elapsed: elapsed,
            rate: limits.minSendRate, window: limits.minRateWindow)
        {
            context.events.minimumRateCut?(.send, .http2)
            connection.reset()
            return true
        }
        let heldByWindow =
            !socketBacked && session.sendWindow().connection <= 0
            && streams.values.contains { !$0.finished && session.bufferedOutbound(streamID: $0.id) > 0 }
        guard
            windowSendRate.check(
                total: session.dataSent, waiting: heldByWindow, elapsed: elapsed,
                rate: limits.minSendRate, window: limits.minRateWindow)
        else { return false }
        context.events.minimumRateCut?(.send, .http2)
        session.goAway(
            HTTP2GoAway(errorCode: .enhanceYourCalm, debugData: "minimum send rate: connection window held shut"),
            terminating: true)
        flush()
        closeAfterFlush(lingering: true)
        return true
    }

    /// A stream's minimum rates: its response held back by its own window, which the client keeps (nearly) shut,
    /// while the socket and the connection's window are clear (`windowsMatter`): the stream is reset (CANCEL). Its
    /// request body trickling in while the client may send it: 408 (the handler, cancelled, sees its body fail with
    /// `timedOut`), then the rest of the body is refused (RST_STREAM NO_ERROR after the answer); the rest of an
    /// answered request's body trickling in: the stream ends. True when the stream was cut.
    private func checkMinimumRates(
        _ stream: Stream, elapsed: UInt64, limits: HTTPServerLimits,
        windowsMatter: Bool
    ) -> Bool {
        let held =
            windowsMatter && session.bufferedOutbound(streamID: stream.id) > 0
            && (session.sendWindow(streamID: stream.id).stream ?? 1) <= 0
        if stream.sendRate.check(
            total: session.bodyBytesSent(streamID: stream.id), waiting: held, elapsed: elapsed,
            rate: limits.minSendRate, window: limits.minRateWindow)
        {
            context.events.minimumRateCut?(.send, .http2)
            end(stream)
            try? session.resetStream(streamID: stream.id, errorCode: .cancel)
            return true
        }
        let receiving = stream.body != nil && !stream.isTunnel && stream.pendingAck == 0
        let draining = stream.discardBody && stream.responded && stream.body == nil && stream.failedStatus == nil
        guard
            stream.receiveRate.check(
                total: Int(clamping: stream.bodyBytes), waiting: receiving || draining,
                elapsed: elapsed, rate: limits.minReceiveRate, window: limits.minRateWindow)
        else { return false }
        context.events.minimumRateCut?(.receive, .http2)
        if receiving, let body = stream.body {
            body.fail(ByteStreamError.timedOut)
            stream.body = nil
            cancelHandler(of: stream)
            stream.discardBody = true
            if !stream.responded {
                stream.failedStatus = 408
                stream.failedAt = connection.loop.roundTime
            }
            try? session.stopRequestAfterResponse(streamID: stream.id)
        } else {
            end(stream)
            try? session.stopRequestAfterResponse(streamID: stream.id)
        }
        return true
    }

    /// Graceful shutdown: a GOAWAY shutdown notice now, the final GOAWAY (last stream processed) after about a
    /// round trip or as soon as no stream is open, then close once the remaining streams are done.
    func beginDrain() {
        guard !draining, !connection.isClosed else { return }
        draining = true
        try? session.goAway(graceful: true)
        if streams.isEmpty {
            sendFinalGoAway()
            return
        }
        scheduleFlush()
        drainTimer = connection.loop.schedule(after: HTTP2ServerConnection.drainNoticeDelay) { [weak self] in
            self?.sendFinalGoAway()
        }
    }

    private func sendFinalGoAway() {
        guard !finalGoAwaySent, !connection.isClosed else { return }
        finalGoAwaySent = true
        drainTimer?.cancel()
        drainTimer = nil
        try? session.goAway(graceful: true)
        scheduleFlush()
    }
}
