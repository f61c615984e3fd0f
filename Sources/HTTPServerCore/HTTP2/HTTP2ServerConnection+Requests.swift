import HTTP2Transport
import HTTPWire
import Locking
import NetCore
import RingQueue

/// Requests: a stream's head becomes an ``HTTPServerRequest`` (or an upgrade, for an extended CONNECT), its DATA the
/// request's body with back-pressure, and its handler starts once the read burst it came in has been processed.
extension HTTP2ServerConnection {
    func startRequest(
        streamID: Int32, head: consuming HTTPRequestHead, extendedProtocol: String?, declaredLength: Int64?,
        endStream: Bool
    ) {
        let now = EventLoop.now()
        lastActivity = now
        let stream = Stream(id: streamID, isHead: head.method == .head, now: now)
        streams[HTTP2StreamKey(streamID)] = stream
        guard runningTasks < maxRunningTasks else {
            // Handlers of reset streams are still running: refuse until they finish (retry-safe for the client).
            stream.finished = true
            try? session.resetStream(streamID: streamID, errorCode: .refusedStream)
            return
        }
        if head.method == .connect, let tunnelProtocol = extendedProtocol {
            guard context.http2Settings.enableConnectProtocol else {
                stream.finished = true
                try? session.resetStream(streamID: streamID, errorCode: .protocolError)
                return
            }
            startTunnelRequest(stream, head: Self.upgradeHandshake(head, to: tunnelProtocol), endStream: endStream)
            return
        }
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
        // A request whose HEADERS ended the stream has no body (as an HTTP/1.1 request without framing has none).
        var body: ByteStream?
        if !endStream {
            body = makeBodyStream(streamID: streamID)
            stream.body = body
        }
        let request = HTTPServerRequest.made(
            head: consume head, bodyStream: body, declaredBodyLength: declaredLength,
            remoteAddress: connection.remoteAddress, isTLS: connection.isTLS,
            loop: connection.loop)
        enqueue(consume request, stream: stream)
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
    private func startTunnelRequest(_ stream: Stream, head: consuming HTTPRequestHead, endStream: Bool) {
        stream.isTunnel = true
        let input: ByteStream
        if endStream {
            input = ByteStream.complete([])
        } else {
            input = makeBodyStream(streamID: stream.id)
            stream.body = input
        }
        let request = HTTPServerRequest.made(
            head: consume head, bodyStream: ByteStream.complete([]), declaredBodyLength: nil,
            remoteAddress: connection.remoteAddress, isTLS: connection.isTLS,
            loop: connection.loop, upgradeInput: input)
        enqueue(consume request, stream: stream)
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
        guard let stream = streams[HTTP2StreamKey(streamID)], stream.pendingAck > 0 else { return }
        session.consumed(streamID: streamID, count: stream.pendingAck)
        stream.pendingAck = 0
        scheduleFlush()
    }

    func receiveBody(streamID: Int32, bytes: [UInt8]) {
        guard let stream = streams[HTTP2StreamKey(streamID)], !stream.discardBody, let body = stream.body else {
            session.consumed(streamID: streamID, count: bytes.count)
            if let stream = streams[HTTP2StreamKey(streamID)], !stream.finished {
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
    private func enqueue(_ request: consuming HTTPServerRequest, stream: Stream) {
        runningTasks += 1
        arrived.append((consume request, stream))
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        connection.loop.executeLocally { [self] in dispatchArrived() }
    }

    /// Starts the handlers of the requests that arrived, except those of streams already over; holds them back
    /// first while the client cancels streams faster than they complete.
    private func dispatchArrived() {
        dispatchScheduled = false
        // The requests queued so far, each moved out in arrival order; one that arrives meanwhile waits for the
        // dispatch its arrival scheduled.
        var ready = arrived.count
        while ready > 0, let (request, stream) = arrived.popFirst() {
            ready -= 1
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
                for (request, stream) in held { arrived.append((request, stream)) }
                held.removeAll()
                dispatchArrived()
            }
        }
    }

    /// Runs the handler of `request` (its place in ``runningTasks`` is taken already).
    private func dispatch(_ request: consuming HTTPServerRequest, stream: Stream) {
        let handler = context.handler
        let compressor = context.compressor
        let owner = UncheckedSendable((self, stream))
        let handlerContext: (any AnyObject & Sendable)?
        switch context.decision(for: request) {
        case .respond(let response):
            guard let body = startResponse(stream, with: consume response) else {
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
        case .answerLater(let decided):
            return startHandler(request, context: decided, stream: stream)
        }
        let request = consume request
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

    func cancelHandler(of stream: Stream) {
        stream.worker?.cancel()
        stream.task?.cancel()
        stream.cancelLaterAnswer()
    }

    /// Starts the handler's work for a request it answers later on the loop (``HTTPServerHandler/start(_:context:responder:)``),
    /// with no task: the stream is its responder, and its place in ``runningTasks`` is given back with the answer.
    private func startHandler(
        _ request: consuming HTTPServerRequest, context handlerContext: (any AnyObject & Sendable)?, stream: Stream
    ) {
        stream.answering = self
        startingHandler = true
        context.handler.start(request, context: handlerContext, responder: stream)
        startingHandler = false
        if let early = stream.earlyAnswer.take() {
            answered(stream, with: context.compressor.applied(to: early, for: request))
        } else if stream.answering != nil, context.compressor != nil {
            // Its head is kept for the compression of the answer still to come (not the whole request).
            stream.compressedFor = (consume request).head
        }
    }

    /// A later answer for `stream`: sent as a task's would be; a streamed body is pumped in a worker or a task.
    func answered(_ stream: Stream, with response: consuming HTTPServerResponse) {
        guard let body = startResponse(stream, with: consume response) else { return taskFinished(stream) }
        let owner = UncheckedSendable((self, stream))
        run(stream) {
            let (server, stream) = owner.value
            await server.finishResponse(stream, streaming: body)
            server.taskFinished(stream)
        }
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
    func answerFailedRequest(_ stream: Stream) {
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
}
