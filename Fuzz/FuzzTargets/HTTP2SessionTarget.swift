import HTTPWire

/// `h2-session`: a client's HTTP/2 frames (after the connection preface, which the harness sends first) through a
/// server-side `HTTP2Session` (nghttp2 with the gateway's callbacks, validation and limits), fed in pieces, answered
/// as the server answers: each request gets a response head and a short body, body bytes are consumed, output drained.
///
/// Checked: every request surfaced, written as HTTP/1.1, is refused by the serializer or parsed back to exactly
/// itself (what `HTTP2ServerConnection` hands on is safe to forward to an HTTP/1.1 upstream); each
/// stream's events come in order (request, body, trailers, end) and none follows its `streamClosed`; body bytes never
/// outnumber the input bytes. nghttp2 itself is not instrumented (a system library), so coverage guidance comes from
/// the session's callbacks and validation.
enum HTTP2SessionTarget {
    static let target = FuzzTarget(
        name: "h2-session",
        summary: "HTTP/2 server session over nghttp2: frames in pieces, requests answered, event order, conversion",
        maxLength: 16384, dictionary: "h2.dict", run: run)

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let responseBody = Array(repeating: UInt8(ascii: "x"), count: 100)

    enum StreamPhase { case open, ended, closed }

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var settings = HTTP2Settings()
        settings.enableConnectProtocol = true
        let session: HTTP2Session
        do {
            session = try HTTP2Session(role: .server, settings: settings)
            try session.feed(preface)
        } catch {
            throw failure("a server session cannot start: \(error)")
        }
        var phases: [Int32: StreamPhase] = [:]
        var bodyBytes = 0
        var output: [UInt8] = []
        for piece in FuzzBytes.pieces(of: bytes) {
            do {
                try session.feed(UnsafeRawBufferPointer(rebasing: bytes[piece]))
            } catch {
                break
            }
            while let event = session.nextEvent() {
                try handle(event, session: session, phases: &phases, bodyBytes: &bodyBytes)
            }
            output.removeAll(keepingCapacity: true)
            do {
                try session.drainOutput(into: &output)
            } catch {
                break
            }
            while let event = session.nextEvent() {
                try handle(event, session: session, phases: &phases, bodyBytes: &bodyBytes)
            }
        }
        try check(bodyBytes <= bytes.count, "more body bytes than input bytes")
    }

    static func handle(
        _ event: HTTP2Event, session: HTTP2Session, phases: inout [Int32: StreamPhase],
        bodyBytes: inout Int
    ) throws(FuzzFailure) {
        switch event {
        case .request(let id, let head, let endStream):
            try check(phases[id] == nil, "a second request on stream \(id)")
            phases[id] = endStream ? .ended : .open
            var http1 = head.head
            http1.version = .http1_1
            try HTTP2FieldsTarget.checkRoundTrip(http1)
            do {
                try session.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)
                _ = try session.sendBody(streamID: id, bytes: responseBody, endStream: true)
            } catch {
                // The stream may be gone already (reset in the same read); the session decides.
            }
        case .requestBody(let id, let chunk):
            try check(phases[id] == .open, "body on stream \(id) in phase \(String(describing: phases[id]))")
            bodyBytes += chunk.count
            session.consumed(streamID: id, count: chunk.count)
        case .trailers(let id, _):
            try check(phases[id] == .open, "trailers on stream \(id) in phase \(String(describing: phases[id]))")
        case .requestEnd(let id):
            try check(phases[id] == .open, "end of stream \(id) in phase \(String(describing: phases[id]))")
            phases[id] = .ended
        case .streamReset(let id, _):
            try check(phases[id] != nil && phases[id] != .closed, "reset of stream \(id) not surfaced or closed")
        case .streamClosed(let id):
            try check(phases[id] != nil && phases[id] != .closed, "close of stream \(id) not surfaced or closed")
            phases[id] = .closed
        case .response, .responseBody, .responseEnd:
            throw failure("a server session surfaced a response event")
        case .goaway, .windowAvailable, .remoteSettingsChanged:
            break
        }
    }
}
