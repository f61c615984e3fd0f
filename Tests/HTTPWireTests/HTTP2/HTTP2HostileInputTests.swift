import Testing

@testable import HTTPWire

/// Raw frames fed to a server session, checked against what nghttp2 plus our checks must do.
@Suite struct HTTP2HostileInputTests {
    @Test func badPrefaceIsFatal() throws {
        let raw = try RawServer()
        #expect(throws: HTTP2Error.self) { try raw.send(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)) }
        do {
            try raw.server.feed(Array("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".utf8))
        } catch {
            #expect(error.kind == .sessionClosed)
        }
        #expect(raw.server.isFinished)

        let other = try HTTP2Session(role: .server)
        do {
            try other.feed(Array("PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n".utf8))
            Issue.record("accepted a bad preface")
        } catch {
            #expect(error.kind == .badPreface)
            #expect(error.isFatal)
        }
    }

    @Test func validRawRequestIsSurfaced() throws {
        let raw = try RawServer()
        try raw.send(
            RawH2.clientStart + RawH2.get(stream: 1, path: "/ok", extra: [("cookie", "a=1"), ("cookie", "b=2")]))
        let requests = raw.events.requests
        try #require(requests.count == 1)
        #expect(requests[0].1.head.target == "/ok")
        #expect(raw.resets(stream: 1).isEmpty)
        #expect(requests[0].1.head.headers["cookie"] == ["a=1; b=2"])
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        let name: String
        let fields: [([UInt8], [UInt8])]
        var data: [UInt8]? = nil
        var testDescription: String { name }
    }

    static func f(_ pairs: [(String, String)]) -> [([UInt8], [UInt8])] {
        pairs.map { (Array($0.0.utf8), Array($0.1.utf8)) }
    }

    static let base: [(String, String)] = [
        (":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", "/")
    ]

    static let malformed: [Malformed] = [
        Malformed(name: "uppercase name", fields: f(base + [("X-Upper", "1")])),
        Malformed(name: "connection", fields: f(base + [("connection", "close")])),
        Malformed(name: "transfer-encoding", fields: f(base + [("transfer-encoding", "chunked")])),
        Malformed(name: "keep-alive", fields: f(base + [("keep-alive", "5")])),
        Malformed(name: "upgrade", fields: f(base + [("upgrade", "websocket")])),
        Malformed(name: "proxy-connection", fields: f(base + [("proxy-connection", "close")])),
        Malformed(name: "te gzip", fields: f(base + [("te", "gzip")])),
        Malformed(name: "missing :path", fields: f([(":method", "GET"), (":scheme", "https"), (":authority", "a")])),
        Malformed(name: "missing :method", fields: f([(":scheme", "https"), (":authority", "a"), (":path", "/")])),
        Malformed(name: "missing :scheme", fields: f([(":method", "GET"), (":authority", "a"), (":path", "/")])),
        Malformed(name: "duplicate :method", fields: f(base + [(":method", "POST")])),
        Malformed(
            name: "pseudo after regular",
            fields: f([
                (":method", "GET"), ("x", "1"), (":scheme", "https"),
                (":authority", "a"), (":path", "/")
            ])),
        Malformed(name: "unknown pseudo", fields: f(base + [(":foo", "bar")])),
        Malformed(name: "CR in value", fields: f(base + [("x", "a\rb")])),
        Malformed(name: "LF in value", fields: f(base + [("x", "a\nb")])),
        Malformed(
            name: "NUL in value",
            fields: [
                ([UInt8](":method".utf8), [UInt8]("GET".utf8)), (Array(":scheme".utf8), Array("https".utf8)),
                (Array(":authority".utf8), Array("a".utf8)), (Array(":path".utf8), Array("/".utf8)),
                (Array("x".utf8), [0x61, 0x00, 0x62])
            ]),
        Malformed(name: "space in name", fields: f(base + [("x y", "1")])),
        Malformed(name: "colon in name", fields: f(base + [("x:y", "1")])),
        Malformed(name: "leading space in value", fields: f(base + [("x", " a")])),
        Malformed(
            name: "path injection",
            fields: f([
                (":method", "GET"), (":scheme", "https"), (":authority", "a"),
                (":path", "/a HTTP/1.1\r\nX: y")
            ])),
        Malformed(
            name: "path not absolute",
            fields: f([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "a")])),
        Malformed(
            name: "asterisk for GET",
            fields: f([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "*")])),
        Malformed(
            name: "empty path",
            fields: f([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "")])),
        Malformed(name: "authority differs from host", fields: f(base + [("host", "evil.com")])),
        Malformed(
            name: "two hosts",
            fields: f([(":method", "GET"), (":scheme", "https"), (":path", "/"), ("host", "a"), ("host", "b")])),
        Malformed(name: "no authority or host", fields: f([(":method", "GET"), (":scheme", "https"), (":path", "/")])),
        Malformed(
            name: "authority with space",
            fields: f([(":method", "GET"), (":scheme", "https"), (":authority", "a b"), (":path", "/")])),
        Malformed(
            name: "bad method",
            fields: f([(":method", "G T"), (":scheme", "https"), (":authority", "a"), (":path", "/")])),
        Malformed(name: "bad content-length", fields: f(base + [("content-length", "1x")])),
        Malformed(name: "two content-lengths", fields: f(base + [("content-length", "1"), ("content-length", "2")])),
        Malformed(name: "content-length with END_STREAM headers", fields: f(base + [("content-length", "5")]))
    ]

    @Test(arguments: malformed)
    func malformedRequestIsReset(_ c: Malformed) throws {
        let raw = try RawServer()
        let block = RawH2.hpackBytes(c.fields)
        try raw.send(
            RawH2.clientStart
                + RawH2.frame(type: RawH2.headers, flags: RawH2.endHeaders | RawH2.endStream, stream: 1, payload: block)
        )
        #expect(raw.events.requests.isEmpty)
        #expect(raw.resets(stream: 1) == [HTTP2ErrorCode.protocolError.rawValue])
        #expect(raw.goaways.isEmpty)
        // The connection survives: a good request on the next stream works.
        try raw.send(RawH2.get(stream: 3))
        #expect(raw.events.requests.map(\.0) == [3])
    }

    @Test func asteriskForOptionsIsAccepted() throws {
        let raw = try RawServer()
        let block = RawH2.hpack([(":method", "OPTIONS"), (":scheme", "https"), (":authority", "a"), (":path", "*")])
        try raw.send(
            RawH2.clientStart
                + RawH2.frame(type: RawH2.headers, flags: RawH2.endHeaders | RawH2.endStream, stream: 1, payload: block)
        )
        let head = try #require(raw.events.requests.first?.1)
        #expect(head.head.target == "*")
    }

    @Test func hostMatchingAuthorityIsAccepted() throws {
        let raw = try RawServer()
        try raw.send(RawH2.clientStart + RawH2.get(stream: 1, extra: [("host", "EXAMPLE.com")]))
        #expect(raw.events.requests.count == 1)
        #expect(raw.events.requests[0].1.head.headers["host"] == ["example.com"])
    }

    @Test func contentLengthMismatch() throws {
        // More DATA than declared: reset before the extra bytes reach the caller.
        let raw = try RawServer()
        let post = [
            (":method", "POST"), (":scheme", "https"), (":authority", "a"), (":path", "/"), ("content-length", "3")
        ]
        try raw.send(
            RawH2.clientStart
                + RawH2.frame(type: RawH2.headers, flags: RawH2.endHeaders, stream: 1, payload: RawH2.hpack(post)))
        #expect(raw.events.requests.count == 1)
        try raw.send(RawH2.frame(type: RawH2.data, flags: RawH2.endStream, stream: 1, payload: Array("12345".utf8)))
        #expect(raw.events.body(of: 1).isEmpty)
        #expect(!raw.events.contains(.requestEnd(streamID: 1)))
        #expect(raw.resets(stream: 1) == [HTTP2ErrorCode.protocolError.rawValue])
        #expect(raw.events.contains(.streamReset(streamID: 1, errorCode: .protocolError)))

        // Less DATA than declared.
        let short = try RawServer()
        try short.send(
            RawH2.clientStart
                + RawH2.frame(type: RawH2.headers, flags: RawH2.endHeaders, stream: 1, payload: RawH2.hpack(post)))
        try short.send(RawH2.frame(type: RawH2.data, flags: RawH2.endStream, stream: 1, payload: Array("12".utf8)))
        #expect(!short.events.contains(.requestEnd(streamID: 1)))
        #expect(short.resets(stream: 1) == [HTTP2ErrorCode.protocolError.rawValue])
    }

    @Test func trailersOnRequest() throws {
        let raw = try RawServer()
        let post = [(":method", "POST"), (":scheme", "https"), (":authority", "a"), (":path", "/")]
        try raw.send(
            RawH2.clientStart
                + RawH2.frame(type: RawH2.headers, flags: RawH2.endHeaders, stream: 1, payload: RawH2.hpack(post)))
        try raw.send(RawH2.frame(type: RawH2.data, stream: 1, payload: [1, 2]))
        try raw.send(
            RawH2.frame(
                type: RawH2.headers, flags: RawH2.endHeaders | RawH2.endStream, stream: 1,
                payload: RawH2.hpack([("x-checksum", "abc")])))
        #expect(raw.events.contains(.trailers(streamID: 1, headers: ["x-checksum": "abc"])))
        #expect(raw.events.last == .requestEnd(streamID: 1))
    }

    @Test func oversizedHeaderListIsRefused() throws {
        var settings = HTTP2Settings()
        settings.maxHeaderListSize = 4096
        let raw = try RawServer(settings: settings)
        let big = String(repeating: "v", count: 5000)
        // Split over CONTINUATION frames to stay under the frame size.
        let block = RawH2.hpack([
            (":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/"), ("x-big", big)
        ])
        let first = Array(block.prefix(3000))
        let rest = Array(block.dropFirst(3000))
        try raw.send(
            RawH2.clientStart + RawH2.frame(type: RawH2.headers, flags: RawH2.endStream, stream: 1, payload: first)
                + RawH2.frame(type: RawH2.continuation, flags: RawH2.endHeaders, stream: 1, payload: rest))
        #expect(raw.events.requests.isEmpty)
        #expect(raw.resets(stream: 1) == [HTTP2ErrorCode.enhanceYourCalm.rawValue])
        try raw.send(RawH2.get(stream: 3))
        #expect(raw.events.requests.map(\.0) == [3])
    }

    @Test func hpackBombIsBounded() throws {
        let raw = try RawServer()
        // One 4000-byte field into the dynamic table, then 2000 references to it in one block.
        let value = String(repeating: "a", count: 4000)
        var block = [UInt8(0x40)] + RawH2.hpackString(Array("x-bomb".utf8)) + RawH2.hpackString(Array(value.utf8))
        block = RawH2.hpack([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/")]) + block
        block += [UInt8](repeating: 0x80 | 62, count: 2000)  // Indexed: dynamic entry 62.
        try raw.send(
            RawH2.clientStart
                + RawH2.frame(type: RawH2.headers, flags: RawH2.endHeaders | RawH2.endStream, stream: 1, payload: block)
        )
        #expect(raw.events.requests.isEmpty)
        #expect(!raw.resets(stream: 1).isEmpty || !raw.goaways.isEmpty)
    }

    @Test func continuationFloodIsFatal() throws {
        let raw = try RawServer()
        try raw.send(RawH2.clientStart)
        var bytes = RawH2.frame(
            type: RawH2.headers, stream: 1,
            payload: RawH2.hpack([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/")]))
        for i in 0..<20_000 {
            bytes += RawH2.frame(type: RawH2.continuation, stream: 1, payload: RawH2.hpack([("x-\(i)", "v")]))
        }
        do {
            try raw.send(bytes)
            Issue.record("CONTINUATION flood accepted")
        } catch {
            #expect(error.kind == .tooManyContinuations)
        }
        #expect(raw.events.requests.isEmpty)
        #expect(raw.server.isFinished)
    }

    @Test func windowUpdateOverflowGetsFlowControlGoAway() throws {
        let raw = try RawServer()
        let increment = RawH2.be32(0x7fff_ffff)
        try raw.send(
            RawH2.clientStart + RawH2.frame(type: RawH2.windowUpdate, payload: increment)
                + RawH2.frame(type: RawH2.windowUpdate, payload: increment))
        let goaway = try #require(raw.goaways.first)
        #expect(goaway.errorCode == HTTP2ErrorCode.flowControlError.rawValue)
        #expect(raw.server.isFinished)
    }

    @Test func settingsFloodWithoutReadingIsFatal() throws {
        let server = try HTTP2Session(role: .server)
        var bytes = RawH2.clientStart
        for _ in 0..<5000 { bytes += RawH2.settingsFrame() }
        do {
            // Feed without ever draining output: ACKs pile up.
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + 9000, bytes.count)
                try server.feed(Array(bytes[offset..<end]))
                offset = end
            }
            Issue.record("SETTINGS flood accepted")
        } catch {
            #expect(error.kind == .flooded)
        }
        #expect(server.isFinished)
    }

    @Test func pingFloodWithoutReadingIsFatal() throws {
        let server = try HTTP2Session(role: .server)
        var bytes = RawH2.clientStart
        for _ in 0..<5000 { bytes += RawH2.frame(type: RawH2.ping, payload: [UInt8](repeating: 1, count: 8)) }
        #expect(throws: HTTP2Error.self) { try server.feed(bytes) }
    }

    @Test func tooManySettingsEntriesClosesTheConnection() throws {
        let raw = try RawServer()
        let entries = (0..<40).map { _ in (UInt16(3), UInt32(100)) }
        do {
            try raw.send(RawH2.preface + RawH2.settingsFrame(entries))
        } catch {
            #expect(error.isFatal)
        }
        #expect(raw.server.isFinished || !raw.goaways.isEmpty)
    }

    @Test func excessStreamsAreRefused() throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 10
        // Before the client acknowledged our SETTINGS: REFUSED_STREAM for the excess, the connection survives.
        let raw = try RawServer(settings: settings)
        try raw.send(RawH2.clientStart)
        var bytes: [UInt8] = []
        for i in 0..<30 { bytes += RawH2.get(stream: UInt32(1 + 2 * i), endStream: false) }
        try raw.send(bytes)
        #expect(raw.events.requests.count == 10)
        let refused = raw.frames.filter {
            $0.type == RawH2.rstStream && $0.errorCode == HTTP2ErrorCode.refusedStream.rawValue
        }
        #expect(refused.count == 20)
        #expect(raw.goaways.isEmpty)

        // After the ACK, exceeding the limit is a connection error (RFC 9113 §5.1.2 allows either; nghttp2 does this).
        let acked = try RawServer(settings: settings)
        try acked.send(RawH2.clientStart + RawH2.frame(type: RawH2.settings, flags: RawH2.ack))
        try acked.send(bytes)
        #expect(acked.events.requests.count == 10)
        #expect(acked.goaways.first?.errorCode == HTTP2ErrorCode.protocolError.rawValue)
    }

    @Test func rapidResetHitsTheBudget() throws {
        var settings = HTTP2Settings()
        settings.streamResetBurst = 50
        settings.streamResetRate = 1
        let raw = try RawServer(settings: settings)
        try raw.send(RawH2.clientStart)
        for i in 0..<200 {
            let id = UInt32(1 + 2 * i)
            do {
                try raw.send(
                    RawH2.get(stream: id) + RawH2.frame(type: RawH2.rstStream, stream: id, payload: RawH2.be32(8)))
            } catch {
                #expect(error.isFatal)
                break
            }
        }
        #expect(!raw.goaways.isEmpty)
        // Streams opened and reset within one read never reach the caller.
        #expect(raw.events.requests.isEmpty)
    }

    @Test func resetInALaterReadIsSurfaced() throws {
        let raw = try RawServer()
        try raw.send(RawH2.clientStart + RawH2.get(stream: 1))
        try raw.send(RawH2.frame(type: RawH2.rstStream, stream: 1, payload: RawH2.be32(8)))
        #expect(raw.events.requests.map(\.0) == [1])
        #expect(raw.events.contains(.streamReset(streamID: 1, errorCode: .cancel)))
        #expect(raw.events.last == .streamClosed(streamID: 1))
    }

    @Test func peerInducedResetsHitTheBudget() throws {
        var settings = HTTP2Settings()
        settings.maxPeerInducedResets = 20
        let raw = try RawServer(settings: settings)
        try raw.send(RawH2.clientStart)
        var bytes: [UInt8] = []
        for i in 0..<50 {
            bytes += RawH2.get(stream: UInt32(1 + 2 * i), extra: [("X-Upper", "1")])
        }
        do { try raw.send(bytes) } catch { #expect(error.isFatal) }
        let goaway = try #require(raw.goaways.last)
        #expect(goaway.errorCode == HTTP2ErrorCode.enhanceYourCalm.rawValue)
        #expect(raw.server.isFinished)
    }

    @Test func evenAndDecreasingStreamIDsAreConnectionErrors() throws {
        let even = try RawServer()
        try even.send(RawH2.clientStart + RawH2.get(stream: 2))
        #expect(even.goaways.first?.errorCode == HTTP2ErrorCode.protocolError.rawValue)
        #expect(even.events.requests.isEmpty)

        let down = try RawServer()
        try down.send(RawH2.clientStart + RawH2.get(stream: 5) + RawH2.get(stream: 3))
        // nghttp2 treats stream 3 as implicitly closed and ignores the late HEADERS; it is never surfaced.
        #expect(down.events.requests.map(\.0) == [5])
    }

    /// Found by fuzzing (Fuzz/corpus/h2-response/status-*): a three-digit `:status` outside 100–599 was surfaced as a
    /// response. It is malformed, as the HTTP/1.1 parser holds it: the stream is reset and the connection goes on.
    @Test(arguments: ["000", "099", "600", "999"])
    func responseStatusOutOfRangeIsReset(_ status: String) throws {
        let client = try HTTP2Session(role: .client)
        let first = try client.sendRequest(
            head: HTTP2RequestHead(method: .get, authority: "upstream", path: "/a"),
            endStream: true)
        let second = try client.sendRequest(
            head: HTTP2RequestHead(method: .get, authority: "upstream", path: "/b"),
            endStream: true)
        _ = try client.pendingOutput()
        try client.feed(
            RawH2.settingsFrame()
                + RawH2.frame(
                    type: RawH2.headers, flags: RawH2.endHeaders | RawH2.endStream, stream: UInt32(first),
                    payload: RawH2.hpack([(":status", status)]))
                + RawH2.frame(
                    type: RawH2.headers, flags: RawH2.endHeaders | RawH2.endStream, stream: UInt32(second),
                    payload: RawH2.hpack([(":status", "200")])))
        let output = RawH2.parse(try client.pendingOutput())
        var events: [HTTP2Event] = []
        while let event = client.nextEvent() { events.append(event) }
        #expect(events.responses().map(\.0) == [second])
        #expect(events.responses().first?.1.status == 200)
        #expect(
            output.filter { $0.type == RawH2.rstStream && $0.stream == UInt32(first) }.compactMap(\.errorCode)
                == [HTTP2ErrorCode.protocolError.rawValue])
    }

    @Test func randomBytesNeverTrap() throws {
        var state: UInt64 = 0xDEAD_BEEF
        func next() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        for round in 0..<300 {
            let server = try HTTP2Session(role: .server)
            var bytes = RawH2.clientStart
            // Mostly plausible frame headers with random payloads.
            for _ in 0..<(round % 20) {
                let length = Int(next()) % 64
                let type = next() % 11
                bytes += RawH2.frame(
                    type: type, flags: next(), stream: UInt32(next() % 8), payload: (0..<length).map { _ in next() })
            }
            _ = try? server.feed(bytes)
            _ = try? server.pendingOutput()
            while server.nextEvent() != nil {}

            let client = try HTTP2Session(role: .client)
            _ = try? client.pendingOutput()
            _ = try? client.feed((0..<(round * 3)).map { _ in next() })
            _ = try? client.pendingOutput()
        }
    }
}
