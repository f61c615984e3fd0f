import HTTPWire

/// `h2-response`: an upstream's HTTP/2 frames through a client-side `HTTP2Session` (nghttp2 with the gateway's
/// callbacks and response validation) that has sent three requests, as `HTTP2ClientConnection` does: `GET /a`, a
/// `POST /b` with a five-byte body and `HEAD /c` (streams 1, 3, 5). The input is what the upstream sends, its
/// SETTINGS included, fed in pieces; body bytes are consumed and output drained after each.
///
/// Checked: responses come only on the streams asked for, one final head each with a status of 200–599 (interim 1xx
/// are not surfaced), valid lower-case field names and clean values without connection-specific fields; each
/// stream's events come in order (head, body, trailers, end) and none after its close; a HEAD gets no body; body
/// bytes never outnumber the input bytes.
enum HTTP2ResponseTarget {
    static let target = FuzzTarget(
        name: "h2-response",
        summary: "HTTP/2 client session over nghttp2: an upstream's frames in pieces, response heads, event order",
        maxLength: 16384, dictionary: "h2.dict", run: run)

    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding",
        "upgrade"
    ]

    enum Phase: Equatable { case waiting, open, ended, closed }

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let session: HTTP2Session
        var phases: [Int32: Phase] = [:]
        var headStream: Int32 = 0
        var output: [UInt8] = []
        do {
            session = try HTTP2Session(role: .client)
            let get = try session.sendRequest(
                head: HTTP2RequestHead(
                    method: .get, authority: "upstream", path: "/a",
                    headers: ["accept": "*/*"]), endStream: true)
            let post = try session.sendRequest(
                head: HTTP2RequestHead(
                    method: .post, authority: "upstream", path: "/b",
                    headers: ["content-length": "5"]), endStream: false)
            _ = try session.sendBody(streamID: post, bytes: Array("hello".utf8), endStream: true)
            headStream = try session.sendRequest(
                head: HTTP2RequestHead(method: .head, authority: "upstream", path: "/c"),
                endStream: true)
            for id in [get, post, headStream] { phases[id] = .waiting }
            try session.drainOutput(into: &output)
        } catch {
            throw failure("a client session cannot start its requests: \(error)")
        }
        var bodyBytes = 0
        for piece in FuzzBytes.pieces(of: bytes) {
            do {
                try session.feed(UnsafeRawBufferPointer(rebasing: bytes[piece]))
            } catch {
                break
            }
            while let event = session.nextEvent() {
                try handle(event, session: session, phases: &phases, headStream: headStream, bodyBytes: &bodyBytes)
            }
            output.removeAll(keepingCapacity: true)
            do {
                try session.drainOutput(into: &output)
            } catch {
                break
            }
            while let event = session.nextEvent() {
                try handle(event, session: session, phases: &phases, headStream: headStream, bodyBytes: &bodyBytes)
            }
        }
        try check(bodyBytes <= bytes.count, "more body bytes than input bytes")
    }

    static func handle(
        _ event: HTTP2Event, session: HTTP2Session, phases: inout [Int32: Phase], headStream: Int32,
        bodyBytes: inout Int
    ) throws(FuzzFailure) {
        func phase(_ id: Int32) -> String { String(describing: phases[id]) }
        switch event {
        case .response(let id, let head, let endStream):
            try check(phases[id] == .waiting, "a response on stream \(id) in phase \(phase(id))")
            phases[id] = endStream ? .ended : .open
            try check((200...599).contains(head.status), "final response status \(head.status)")
            for field in head.headers {
                try check(
                    FuzzBytes.isToken(field.name) && FuzzBytes.asciiLowercased(field.name) == field.name,
                    "field name \(field.name)")
                try check(!connectionSpecific.contains(field.name), "connection-specific field \(field.name)")
                try check(
                    field.value.utf8.allSatisfy { $0 != 0 && $0 != 0x0A && $0 != 0x0D },
                    "NUL, CR or LF in \(field.name)")
            }
        case .responseBody(let id, let chunk):
            try check(phases[id] == .open, "body on stream \(id) in phase \(phase(id))")
            try check(id != headStream, "a body for HEAD")
            bodyBytes += chunk.count
            session.consumed(streamID: id, count: chunk.count)
        case .trailers(let id, let trailers):
            try check(phases[id] == .open || phases[id] == .ended, "trailers on stream \(id) in phase \(phase(id))")
            for field in trailers {
                try check(
                    !FuzzBytes.hasPrefix(field.name, ":") && !connectionSpecific.contains(field.name),
                    "trailer field \(field.name)")
            }
        case .responseEnd(let id):
            try check(phases[id] == .open || phases[id] == .ended, "end of stream \(id) in phase \(phase(id))")
            phases[id] = .ended
        case .streamReset(let id, _):
            try check(phases[id] != nil && phases[id] != .closed, "reset of stream \(id) in phase \(phase(id))")
        case .streamClosed(let id):
            try check(phases[id] != nil && phases[id] != .closed, "close of stream \(id) in phase \(phase(id))")
            phases[id] = .closed
        case .request, .requestBody, .requestEnd:
            throw failure("a client session surfaced a request event")
        case .goaway, .windowAvailable, .remoteSettingsChanged:
            break
        }
    }
}
