import Testing

@testable import HTTPWire

private func getHead(_ path: String = "/", headers: HTTPFields = HTTPFields()) -> HTTP2RequestHead {
    HTTP2RequestHead(method: .get, scheme: "https", authority: "example.com", path: path, headers: headers)
}

@Suite struct HTTP2SessionTests {
    @Test func getWithResponseBody() throws {
        let pair = try H2Pair()
        let id = try pair.client.sendRequest(
            head: getHead("/hello?x=1", headers: ["Accept": "*/*", "Connection": "close"]),
            endStream: true)
        try pair.pump()
        let requests = pair.takeServerEvents().requests
        try #require(requests.count == 1)
        #expect(requests[0].0 == id)
        let head = requests[0].1.head
        #expect(head.method == .get)
        #expect(head.target == "/hello?x=1")
        #expect(head.version == .http2)
        #expect(head.headers.name(at: 0) == "Host")
        #expect(head.headers.first(name: "host") == "example.com")
        #expect(head.headers.first(name: "accept") == "*/*")
        #expect(!head.headers.contains(name: "connection"))
        #expect(requests[0].2)

        try pair.server.sendResponse(
            streamID: id, head: HTTPResponseHead(status: 200, headers: ["Content-Type": "text/plain"]),
            endStream: false)
        try pair.server.sendBody(streamID: id, bytes: Array("hello ".utf8), endStream: false)
        try pair.server.sendBody(streamID: id, bytes: Array("world".utf8), endStream: true)
        try pair.pump()
        let events = pair.takeClientEvents()
        let responses = events.responses()
        try #require(responses.count == 1)
        #expect(responses[0].1.status == 200)
        #expect(responses[0].1.version == .http2)
        #expect(responses[0].1.headers.first(name: "content-type") == "text/plain")
        #expect(events.body(of: id) == Array("hello world".utf8))
        #expect(events.contains(.responseEnd(streamID: id)))
        #expect(events.last == .streamClosed(streamID: id))
        #expect(!events.contains { if case .streamReset = $0 { true } else { false } })
        #expect(pair.takeServerEvents() == [.streamClosed(streamID: id)])
        #expect(pair.client.activeLocalStreams == 0)
    }

    @Test func addedFieldsGoAfterTheHeadsOwn() throws {
        let pair = try H2Pair()
        let ids = try (0..<2).map { _ in try pair.client.sendRequest(head: getHead(), endStream: true) }
        try pair.pump()
        _ = pair.takeServerEvents()
        var added = HTTP2AddedResponseFields()
        added.requestID = "4bf92f35"
        added.date = "Mon, 07 Dec 2026 05:00:00 GMT"
        added.contentLength = 10
        try pair.server.sendResponse(
            streamID: ids[0], head: HTTPResponseHead(status: 201, headers: ["Content-Type": "text/plain"]),
            added: added, endStream: false)
        try pair.server.sendBody(streamID: ids[0], bytes: Array("0123456789".utf8), endStream: true)
        // A request id with a line break is left out; a zero length is written.
        var refused = HTTP2AddedResponseFields()
        refused.requestID = "a\r\nb"
        refused.contentLength = 0
        try pair.server.sendResponse(
            streamID: ids[1], head: HTTPResponseHead(status: 200), added: refused, endStream: true)
        try pair.pump()
        let responses = pair.takeClientEvents().responses()
        try #require(responses.count == 2)
        let first = try #require(responses.first { $0.0 == ids[0] }).1
        #expect(first.status == 201)
        #expect(
            first.headers.map(\.name) == ["content-type", "x-request-id", "date", "content-length"],
            "the head's own fields, then the added ones in order")
        #expect(first.headers.first(name: "x-request-id") == "4bf92f35")
        #expect(first.headers.first(name: "date") == "Mon, 07 Dec 2026 05:00:00 GMT")
        #expect(first.headers.first(name: "content-length") == "10")
        let second = try #require(responses.first { $0.0 == ids[1] }).1
        #expect(second.headers.map(\.name) == ["content-length"])
        #expect(second.headers.first(name: "content-length") == "0")
    }

    @Test func postWithBody() throws {
        let pair = try H2Pair()
        let head = HTTP2RequestHead(
            method: .post, authority: "api.test", path: "/upload",
            headers: ["content-type": "application/json", "content-length": "11"])
        let id = try pair.client.sendRequest(head: head, endStream: false)
        try pair.client.sendBody(streamID: id, bytes: Array("{\"a\":".utf8), endStream: false)
        try pair.pump()
        try pair.client.sendBody(streamID: id, bytes: Array("12345}".utf8), endStream: true)
        try pair.pump()
        let events = pair.takeServerEvents()
        #expect(events.requests.count == 1)
        #expect(events.requests.first?.2 == false)
        #expect(events.body(of: id) == Array("{\"a\":12345}".utf8))
        #expect(events.contains(.requestEnd(streamID: id)))
        pair.server.consumed(streamID: id, count: 11)

        try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 204), endStream: true)
        try pair.pump()
        let clientEvents = pair.takeClientEvents()
        #expect(clientEvents.responses().first?.1.status == 204)
        #expect(clientEvents.contains(.responseEnd(streamID: id)))
        #expect(clientEvents.contains(.streamClosed(streamID: id)))
    }

    @Test func bodyWithEndStreamOnLastChunk() throws {
        let pair = try H2Pair()
        let id = try pair.client.sendRequest(head: getHead(), endStream: true)
        try pair.pump()
        // (Sending trailers is not in the API; receiving them is tested with raw frames.)
        try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)
        try pair.server.sendBody(streamID: id, bytes: [1, 2, 3], endStream: true)
        try pair.pump()
        #expect(pair.takeClientEvents().body(of: id) == [1, 2, 3])
    }

    @Test func hundredConcurrentStreams() throws {
        let pair = try H2Pair()
        try pair.pump()
        var ids: [Int32] = []
        for i in 0..<100 {
            #expect(pair.client.canOpenStream)
            ids.append(try pair.client.sendRequest(head: getHead("/item/\(i)"), endStream: true))
        }
        try pair.pump()
        let requests = pair.takeServerEvents().requests
        #expect(requests.count == 100)
        #expect(Set(requests.map(\.0)) == Set(ids))
        for (id, head, _) in requests {
            try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)
            try pair.server.sendBody(streamID: id, bytes: Array(head.head.target.utf8), endStream: true)
        }
        try pair.pump()
        let events = pair.takeClientEvents()
        for (i, id) in ids.enumerated() {
            #expect(events.body(of: id) == Array("/item/\(i)".utf8))
        }
        #expect(pair.client.activeLocalStreams == 0)
    }

    @Test func streamLimitIsRespected() throws {
        var serverSettings = HTTP2Settings()
        serverSettings.maxConcurrentStreams = 100
        let pair = try H2Pair(server: serverSettings)
        try pair.pump()
        var ids: [Int32] = []
        for _ in 0..<100 { ids.append(try pair.client.sendRequest(head: getHead(), endStream: true)) }
        #expect(!pair.client.canOpenStream)
        // Sent anyway: nghttp2 holds it back rather than exceeding the limit.
        let extra = try pair.client.sendRequest(head: getHead("/101"), endStream: true)
        try pair.pump()
        #expect(pair.takeServerEvents().requests.count == 100)
        try pair.server.sendResponse(streamID: ids[0], head: HTTPResponseHead(status: 200), endStream: true)
        try pair.pump()
        let later = pair.takeServerEvents().requests
        #expect(later.map(\.0) == [extra])
        #expect(later.first?.1.head.target == "/101")
    }

    @Test func flowControlBackPressure() throws {
        var clientSettings = HTTP2Settings()
        clientSettings.initialWindowSize = 16_384
        clientSettings.connectionWindowSize = 65_535
        let pair = try H2Pair(client: clientSettings)
        let id = try pair.client.sendRequest(head: getHead("/big"), endStream: true)
        try pair.pump()
        _ = pair.takeServerEvents()
        try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)

        let total = 1 << 20
        let payload = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var offset = 0
        var received: [UInt8] = []
        var pauses = 0
        var resumes = 0
        var rounds = 0
        while received.count < total {
            rounds += 1
            try #require(rounds < 10_000)
            // Producer: fill until sendBody says stop.
            while offset < total {
                let end = min(offset + 10_000, total)
                let more = try pair.server.sendBody(streamID: id, bytes: payload[offset..<end], endStream: end == total)
                offset = end
                if !more {
                    pauses += 1
                    break
                }
            }
            #expect(pair.server.bufferedOutbound(streamID: id) <= 64 * 1024 + 10_000)
            try pair.pump()
            let serverEvents = pair.takeServerEvents()
            resumes += serverEvents.filter { $0 == .windowAvailable(streamID: id) }.count
            let chunk = pair.takeClientEvents().body(of: id)
            // Never more than one stream window without consumed().
            #expect(chunk.count <= 16_384)
            received += chunk
            if chunk.isEmpty && offset == total && pair.server.bufferedOutbound(streamID: id) == 0
                && received.count < total
            {
                Issue.record("stalled at \(received.count)")
                break
            }
            pair.client.consumed(streamID: id, count: chunk.count)
        }
        #expect(received == payload)
        #expect(pauses > 0)
        #expect(resumes > 0)
    }

    @Test func noProgressWithoutConsumed() throws {
        var clientSettings = HTTP2Settings()
        clientSettings.initialWindowSize = 1000
        let pair = try H2Pair(client: clientSettings)
        let id = try pair.client.sendRequest(head: getHead(), endStream: true)
        try pair.pump()
        try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)
        try pair.server.sendBody(streamID: id, bytes: [UInt8](repeating: 7, count: 5000), endStream: true)
        try pair.pump()
        try pair.pump()
        #expect(pair.takeClientEvents().body(of: id).count == 1000)
        #expect(pair.server.bufferedOutbound(streamID: id) == 4000)
        pair.client.consumed(streamID: id, count: 1000)
        try pair.pump()
        #expect(pair.takeClientEvents().body(of: id).count == 1000)
    }

    @Test func deferredProviderResumes() throws {
        let pair = try H2Pair()
        let id = try pair.client.sendRequest(head: getHead(), endStream: true)
        try pair.pump()
        try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)
        try pair.pump()  // Provider runs, finds nothing, defers.
        #expect(pair.takeClientEvents().responses().count == 1)
        for i in 0..<5 {
            try pair.server.sendBody(streamID: id, bytes: [UInt8(i)], endStream: i == 4)
            try pair.pump()
            #expect(pair.takeClientEvents().body(of: id) == [UInt8(i)])
        }
        #expect(pair.clientEvents.isEmpty)
    }

    @Test func clientResetSurfacesOnServer() throws {
        let pair = try H2Pair()
        let id = try pair.client.sendRequest(
            head: HTTP2RequestHead(method: .post, authority: "a", path: "/"), endStream: false)
        try pair.pump()
        #expect(pair.takeServerEvents().requests.count == 1)
        try pair.client.resetStream(streamID: id, errorCode: .cancel)
        try pair.pump()
        #expect(
            pair.takeServerEvents() == [.streamReset(streamID: id, errorCode: .cancel), .streamClosed(streamID: id)])
        // The client asked for it: only the close.
        #expect(pair.takeClientEvents() == [.streamClosed(streamID: id)])
        #expect(throws: HTTP2Error.self) {
            try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: true)
        }
    }

    @Test func serverResetSurfacesOnClient() throws {
        let pair = try H2Pair()
        let id = try pair.client.sendRequest(head: getHead(), endStream: true)
        try pair.pump()
        try pair.server.resetStream(streamID: id, errorCode: .refusedStream)
        try pair.pump()
        #expect(
            pair.takeClientEvents() == [
                .streamReset(streamID: id, errorCode: .refusedStream), .streamClosed(streamID: id)
            ])
    }

    @Test func gracefulGoAway() throws {
        let pair = try H2Pair()
        let first = try pair.client.sendRequest(head: getHead("/slow"), endStream: true)
        try pair.pump()
        _ = pair.takeServerEvents()
        try pair.server.goAway(graceful: true)  // Phase 1: shutdown notice.
        // A request already on its way when the notice was sent is still served.
        let second = try pair.client.sendRequest(head: getHead("/late"), endStream: true)
        try pair.pump()
        #expect(pair.takeClientEvents().contains(.goaway(lastStreamID: Int32.max, errorCode: .noError)))
        #expect(pair.takeServerEvents().requests.map(\.0) == [second])
        #expect(!pair.client.canOpenStream)
        #expect(throws: HTTP2Error.self) { _ = try pair.client.sendRequest(head: getHead(), endStream: true) }
        try pair.server.goAway(graceful: true)  // Phase 2: final GOAWAY, last stream = second.
        try pair.pump()
        #expect(pair.takeClientEvents().contains(.goaway(lastStreamID: second, errorCode: .noError)))
        #expect(!pair.server.isFinished)
        for id in [first, second] {
            try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: false)
            try pair.server.sendBody(streamID: id, bytes: [1], endStream: true)
        }
        try pair.pump()
        let events = pair.takeClientEvents()
        #expect(events.body(of: first) == [1])
        #expect(events.body(of: second) == [1])
        #expect(pair.server.isFinished)
        #expect(pair.client.isFinished)
    }

    @Test func requestsAfterFinalGoAwayAreRefused() throws {
        let pair = try H2Pair()
        let first = try pair.client.sendRequest(head: getHead(), endStream: true)
        try pair.pump()
        try pair.server.goAway(graceful: false, errorCode: .noError)
        try pair.pump()
        #expect(pair.takeClientEvents().contains(.goaway(lastStreamID: first, errorCode: .noError)))
        #expect(pair.server.isFinished)
    }

    @Test func requestCapSendsGoAway() throws {
        var serverSettings = HTTP2Settings()
        serverSettings.maxRequestsPerConnection = 3
        let pair = try H2Pair(server: serverSettings)
        var ids: [Int32] = []
        for i in 0..<5 { ids.append(try pair.client.sendRequest(head: getHead("/\(i)"), endStream: true)) }
        try pair.pump()
        let served = pair.takeServerEvents().requests.map(\.0)
        #expect(served == Array(ids.prefix(3)))
        #expect(pair.server.isDraining)
        let clientEvents = pair.takeClientEvents()
        #expect(clientEvents.contains(.goaway(lastStreamID: ids[2], errorCode: .noError)))
        // The two above the last stream id are reported as refused (safe to retry elsewhere).
        for id in ids.suffix(2) {
            #expect(clientEvents.contains(.streamReset(streamID: id, errorCode: .refusedStream)))
            #expect(clientEvents.contains(.streamClosed(streamID: id)))
        }
        for id in served {
            try pair.server.sendResponse(streamID: id, head: HTTPResponseHead(status: 200), endStream: true)
        }
        try pair.pump()
        #expect(pair.takeClientEvents().responses().count == 3)
        #expect(pair.server.isFinished)
    }

    @Test func responseToHeadRequestWithContentLength() throws {
        let pair = try H2Pair()
        let id = try pair.client.sendRequest(
            head: HTTP2RequestHead(method: .head, authority: "a", path: "/"), endStream: true)
        try pair.pump()
        try pair.server.sendResponse(
            streamID: id, head: HTTPResponseHead(status: 200, headers: ["Content-Length": "1234"]),
            endStream: true)
        try pair.pump()
        let events = pair.takeClientEvents()
        #expect(events.responses().first?.1.headers.first(name: "content-length") == "1234")
        #expect(!events.contains { if case .streamReset = $0 { true } else { false } })
    }

    @Test func outboundHeadersAreSanitised() throws {
        let pair = try H2Pair()
        var headers: HTTPFields = [
            "X-Good": "1", "Transfer-Encoding": "chunked", "Keep-Alive": "5", "X-Bad": "a\r\nInjected: yes",
            "Connection": "x-hop", "X-Hop": "1", "TE": "gzip"
        ]
        headers.add(name: "Bad Name", value: "v")
        let id = try pair.client.sendRequest(head: getHead(headers: headers), endStream: true)
        try pair.pump()
        let head = try #require(pair.takeServerEvents().requests.first?.1)
        #expect(head.head.headers.map(\.name) == ["Host", "x-good"])
        try pair.server.sendResponse(
            streamID: id, head: HTTPResponseHead(status: 200, headers: ["Upgrade": "h2c", "Set-Cookie": "a=b"]),
            endStream: true)
        try pair.pump()
        #expect(pair.takeClientEvents().responses().first?.1.headers.map(\.name) == ["set-cookie"])
    }

    @Test func misuseThrowsInsteadOfTrapping() throws {
        let server = try HTTP2Session(role: .server)
        #expect(throws: HTTP2Error.self) { _ = try server.sendRequest(head: getHead(), endStream: true) }
        #expect(throws: HTTP2Error.self) {
            try server.sendResponse(streamID: 1, head: HTTPResponseHead(status: 200), endStream: true)
        }
        #expect(throws: HTTP2Error.self) { try server.sendBody(streamID: 3, bytes: [1], endStream: true) }
        #expect(throws: HTTP2Error.self) { try server.resetStream(streamID: 5) }
        server.consumed(streamID: 7, count: 100)
        server.consumed(streamID: -1, count: -5)
        let client = try HTTP2Session(role: .client)
        #expect(throws: HTTP2Error.self) {
            try client.sendResponse(streamID: 1, head: HTTPResponseHead(status: 200), endStream: true)
        }
        #expect(throws: HTTP2Error.self) {
            _ = try client.sendRequest(
                head: HTTP2RequestHead(method: "GE T", authority: "a", path: "/"), endStream: true)
        }
        try server.feed(UnsafeRawBufferPointer(start: nil, count: 0))
    }
}
