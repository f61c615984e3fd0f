import HTTP2Transport
import HTTPWire
import NetCore

/// Responses: the handler's answer as HEADERS and DATA, a streamed body pumped as the stream's window allows, and
/// what is left of the request's body once the answer is complete.
extension HTTP2ServerConnection {
    /// Sends the handler's response on `stream`; streams the body with back-pressure. Runs on the loop.
    func respond(_ stream: Stream, with response: consuming HTTPServerResponse) async {
        guard let body = startResponse(stream, with: consume response) else { return }
        await finishResponse(stream, streaming: body)
    }

    /// Pumps a streamed body, then completes the stream.
    func finishResponse(_ stream: Stream, streaming body: ByteStream) async {
        await pump(body, to: stream)
        if !stream.finished { responseComplete(stream) }
    }

    /// Sends the head and a whole body; returns a body that still has to be streamed (see ``finishResponse``), or nil
    /// when the response is complete (or could not be sent).
    func startResponse(_ stream: Stream, with response: consuming HTTPServerResponse) -> ByteStream? {
        guard !stream.finished, !stream.responded, !connection.isClosed else { return nil }
        if let status = stream.failedStatus {
            // The body failed: the handler's answer with the server's status, unless it would stream a body.
            guard !response.body.isStream else {
                answerFailedRequest(stream)
                return nil
            }
            response.head.replaceStatus(with: status)
            stream.failedStatus = nil
            return startResponse(stream, with: consume response)
        }
        stream.responded = true
        if let fault = response.fault {
            // A deliberate failure (a stub's fault): this stream only is reset, the connection goes on.
            stream.finished = true
            try? session.resetStream(streamID: stream.id, errorCode: fault.http2ErrorCode)
            scheduleFlush()
            return nil
        }
        if stream.isTunnel { response = tunnelAnswer(stream, consume response) }
        // The head moved out of the response (no copy), so its fields are edited below in place.
        var head = HTTPResponseHead(status: 200, reason: "")
        swap(&head, &response.head)
        head.version = .http2
        // What the server adds goes into the frame beside the head's fields (`added`), not into a copy of their list.
        var added = HTTP2AddedResponseFields()
        added.requestID = response.requestID
        // Connection-specific fields, in one pass by token (nothing is copied when there are none).
        head.headers.removeAll { token, _ in
            switch token {
            case .connection, .keepAlive, .transferEncoding, .upgrade, .proxyConnection: return true
            default: return false
            }
        }
        if head.headers.firstIndex(token: .date) == nil { added.date = context.dateCache.current }
        if !(200...999).contains(head.status) {
            // Interim or invalid status as a final response: nothing sensible to send.
            head = HTTPResponseHead(status: 502, version: .http2, headers: ["Date": context.dateCache.current])
            added = HTTP2AddedResponseFields()
        }
        let bodyAllowed = !stream.isHead && !head.statusForbidsBody
        var bytes: [UInt8] = []
        var bodyStream: ByteStream?
        switch head.statusForbidsBody ? HTTPServerResponse.Body.none : response.body {
        case .none:
            if !head.statusForbidsBody && !stream.isHead && head.headers.firstIndex(token: .contentLength) == nil {
                added.contentLength = 0
            }
        case .bytes(let body):
            if head.headers.firstIndex(token: .contentLength) == nil {
                added.contentLength = body.count
            } else if !Self.hasOnlyContentLength(body.count, in: head.headers) {
                head.headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
            }
            if bodyAllowed { bytes = body }
        case .stream(let body):
            if bodyAllowed { bodyStream = body }
        }
        if head.statusForbidsBody { head.headers.remove(name: "Content-Length") }
        let endStream = bytes.isEmpty && bodyStream == nil
        do {
            try session.sendResponse(streamID: stream.id, head: head, added: added, endStream: endStream)
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

    /// Whether `headers` has one `Content-Length` field and it says `count` (a proxied answer's, typically): then it
    /// stays as it is, with no new string made and no field rewritten.
    static func hasOnlyContentLength(_ count: Int, in headers: HTTPFields) -> Bool {
        guard let index = headers.firstIndex(token: .contentLength),
            headers.firstIndex(token: .contentLength, from: index + 1) == nil
        else { return false }
        return headers.withField(at: index) { _, value in
            guard !value.isEmpty, value.count <= 18 else { return false }
            var parsed = 0
            for byte in value {
                guard byte >= 0x30 && byte <= 0x39 else { return false }
                parsed = parsed * 10 + Int(byte - 0x30)
            }
            // Leading zeros ("0300") are rewritten, as before.
            return parsed == count && (value.count == 1 || value[0] != 0x30)
        }
    }

    /// The answer to an extended CONNECT. A 101 with a streamed body opens the tunnel: the client gets `200` (RFC 8441
    /// §5) without the HTTP/1.1 handshake's `Sec-WebSocket-Accept`, then the body's bytes as DATA while its own DATA
    /// goes on to the request's `upgradeInput`. Any other answer refuses it and goes out as it is, except a 2xx, which
    /// would tell the client its tunnel is open when no handler took it: that is answered 501. A refused tunnel's
    /// input is an ordinary body from then on, dropped once the answer is complete.
    private func tunnelAnswer(_ stream: Stream, _ response: consuming HTTPServerResponse) -> HTTPServerResponse {
        if response.head.status == 101, response.body.isStream {
            response.head.replaceStatus(with: 200)
            response.head.headers.remove(name: "Sec-WebSocket-Accept")
            response.head.headers.remove(name: "Content-Length")
            return response
        }
        stream.isTunnel = false
        guard (200...299).contains(response.head.status) else { return response }
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

    func sendFailed(_ stream: Stream, _ error: HTTP2Error) {
        if error.isFatal {
            sessionFailed(error)
            return
        }
        guard !stream.finished else { return }
        stream.finished = true
        try? session.resetStream(streamID: stream.id, errorCode: .internalError)
        scheduleFlush()
    }
}
