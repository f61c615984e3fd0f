import Testing

@testable import HTTPWire

@Suite struct HTTP1SerializerTests {
    private func parseRequest(_ wire: [UInt8]) -> HTTPRequestHead? {
        var parser = HTTP1RequestParser()
        parser.append(wire)
        if case .head(let head, _)? = parser.next() { return head }
        return nil
    }

    private func parseResponse(_ wire: [UInt8], method: HTTPMethod = .get) -> HTTPResponseHead? {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: method)
        parser.append(wire)
        if case .head(let head, _)? = parser.next() { return head }
        return nil
    }

    @Test func requestHeadRoundTrip() throws {
        let heads = [
            HTTPRequestHead(method: .get, target: "/a/b?c=d&e", headers: ["Host": "example.com", "Accept": "*/*"]),
            HTTPRequestHead(
                method: .post, target: "/upload",
                headers: [
                    "Host": "[::1]:8080", "Content-Length": "12", "X-Utf8": "café", "X-Tab": "a\tb"
                ]),
            HTTPRequestHead(method: "PROPFIND", target: "/dav", version: .http1_0, headers: [:]),
            HTTPRequestHead(method: .options, target: "*", headers: ["Host": "h"])
        ]
        for head in heads {
            var wire: [UInt8] = []
            try HTTP1Serializer.writeRequestHead(head, into: &wire)
            #expect(parseRequest(wire) == head)
        }
        var wire: [UInt8] = []
        try HTTP1Serializer.writeRequestHead(heads[0], into: &wire)
        #expect(wire == bytes("GET /a/b?c=d&e HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"))
    }

    @Test func responseHeadRoundTrip() throws {
        let heads = [
            HTTPResponseHead(status: 200, headers: ["Content-Length": "0"]),
            HTTPResponseHead(status: 404, reason: "Nope", headers: ["Content-Length": "0", "X-A": "1"]),
            HTTPResponseHead(status: 299, headers: ["Content-Length": "0"]),
            HTTPResponseHead(status: 503, version: .http1_0, headers: ["Content-Length": "0", "Retry-After": "5"])
        ]
        for head in heads {
            var wire: [UInt8] = []
            try HTTP1Serializer.writeResponseHead(head, into: &wire)
            #expect(parseResponse(wire) == head)
        }
        var wire: [UInt8] = []
        try HTTP1Serializer.writeResponseHead(
            HTTPResponseHead(status: 200, headers: ["Content-Length": "2"]), into: &wire)
        #expect(wire == bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"))
        wire.removeAll()
        try HTTP1Serializer.writeResponseHead(HTTPResponseHead(status: 404, reason: "Nope"), into: &wire)
        #expect(wire == bytes("HTTP/1.1 404 Nope\r\n\r\n"))
    }

    @Test func refusesHeaderInjection() {
        let badValues = ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\u{0}b", "a\u{1B}b"]
        for value in badValues {
            var wire: [UInt8] = []
            #expect(throws: HTTP1SerializationError.self) {
                try HTTP1Serializer.writeRequestHead(
                    HTTPRequestHead(method: .get, target: "/", headers: ["Host": "h", "X": value]), into: &wire)
            }
            #expect(throws: HTTP1SerializationError.self) {
                try HTTP1Serializer.writeResponseHead(HTTPResponseHead(status: 200, headers: ["X": value]), into: &wire)
            }
        }
        let badNames = ["Bad Name", "X:Y", "", "X\r\nY", "Ünïcode", "X(Y)"]
        for name in badNames {
            var wire: [UInt8] = []
            #expect(throws: HTTP1SerializationError.self) {
                try HTTP1Serializer.writeResponseHead(HTTPResponseHead(status: 200, headers: [name: "v"]), into: &wire)
            }
        }
    }

    @Test func refusesBadRequestLinePartsAndStatus() {
        var wire: [UInt8] = []
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeRequestHead(HTTPRequestHead(method: "GE T", target: "/"), into: &wire)
        }
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeRequestHead(HTTPRequestHead(method: .get, target: "/a b"), into: &wire)
        }
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeRequestHead(HTTPRequestHead(method: .get, target: "/a\r\nX: y"), into: &wire)
        }
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeRequestHead(HTTPRequestHead(method: .get, target: ""), into: &wire)
        }
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeResponseHead(HTTPResponseHead(status: 200, reason: "OK\r\nX: y"), into: &wire)
        }
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeResponseHead(HTTPResponseHead(status: 1000), into: &wire)
        }
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeResponseHead(
                HTTPResponseHead(status: 200, version: HTTPVersion(major: 10, minor: 1)),
                into: &wire)
        }
    }

    @Test func chunks() {
        var wire: [UInt8] = []
        HTTP1Serializer.writeChunk([UInt8](), into: &wire)
        #expect(wire.isEmpty)
        HTTP1Serializer.writeChunk(bytes("hello"), into: &wire)
        #expect(wire == bytes("5\r\nhello\r\n"))
        wire.removeAll()
        let big = [UInt8](repeating: 0x61, count: 0x1abc)
        big.withUnsafeBytes { HTTP1Serializer.writeChunk($0, into: &wire) }
        #expect(Array(wire.prefix(6)) == bytes("1abc\r\n"))
        #expect(Array(wire.suffix(2)) == bytes("\r\n"))
        #expect(wire.count == 6 + 0x1abc + 2)
        wire.removeAll()
        HTTP1Serializer.writeLastChunk(into: &wire)
        #expect(wire == bytes("0\r\n\r\n"))
    }

    @Test func contentLengthLines() {
        for length in [0, 7, 10, 13, 99, 100, 65_535, 1_000_000_007, Int.max] {
            var wire: [UInt8] = []
            HTTP1Serializer.writeContentLength(length, into: &wire)
            #expect(wire == bytes("Content-Length: \(length)\r\n"))
        }
        var wire: [UInt8] = []
        HTTP1Serializer.writeContentLength(-5, into: &wire)
        #expect(wire == bytes("Content-Length: 0\r\n"))
    }

    @Test func requestLinesAreWrittenByteForByteWhateverTheTargetsLength() throws {
        let long = "/" + String(repeating: "a", count: 8_000) + "?q=1"
        for (method, target, version) in [
            (HTTPMethod.get, "/", HTTPVersion.http1_1), (.post, "/x?y=z", .http1_0), (.delete, long, .http1_1)
        ] {
            var wire: [UInt8] = []
            try HTTP1Serializer.writeRequestLine(method: method, target: target, version: version, into: &wire)
            #expect(wire == bytes("\(method.rawValue) \(target) HTTP/\(version.major).\(version.minor)\r\n"))
        }
        var wire: [UInt8] = []
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeRequestLine(
                method: .get, target: "/", version: HTTPVersion(major: 10, minor: 0), into: &wire)
        }
    }

    @Test func chunkedBodyRoundTrip() throws {
        var wire: [UInt8] = []
        try HTTP1Serializer.writeRequestHead(
            HTTPRequestHead(method: .post, target: "/", headers: ["Host": "h", "Transfer-Encoding": "chunked"]),
            into: &wire)
        var expectedBody: [UInt8] = []
        for size in [1, 15, 16, 255, 256, 4096, 0] {
            let piece = [UInt8](repeating: UInt8(truncatingIfNeeded: size), count: size)
            expectedBody += piece
            HTTP1Serializer.writeChunk(piece, into: &wire)
        }
        HTTP1Serializer.writeLastChunk(into: &wire)
        let events = requestEvents(wire, sizes: randomSizes(seed: 11, maxPiece: 700))
        #expect(events.count == 3)
        #expect(events[1] == .body(expectedBody))
        #expect(events[2] == .end)
    }

    /// Fields made every way (parsed with and without space after the colon, added, copied, grown, set again,
    /// replaced, removed) serialize as `name: value` lines, whether a field's line is one run of the storage or not.
    @Test func fieldsMadeEveryWaySerializeAsTheirLines() throws {
        var parser = HTTP1RequestParser()
        parser.append(bytes("GET / HTTP/1.1\r\nHost: h\r\nA:b\r\nC:   d  \r\nE: f\r\n\r\n"))
        guard case .head(let head, _)? = parser.next() else {
            Issue.record("no head")
            return
        }
        var parsed: [UInt8] = []
        try HTTP1Serializer.writeFields(of: head.headers, into: &parsed)
        #expect(String(decoding: parsed, as: UTF8.self) == "Host: h\r\nA: b\r\nC: d\r\nE: f\r\n")
        var someParsed: [UInt8] = []
        try HTTP1Serializer.writeFields(of: head.headers, into: &someParsed) { $0 != .host }
        #expect(String(decoding: someParsed, as: UTF8.self) == "A: b\r\nC: d\r\nE: f\r\n")
        var fields = head.headers
        fields.add(name: "G", value: "h")
        fields.add(knownName: "Content-Type", token: .contentType, value: "text/plain")
        fields.setValue("f2", at: 3)
        var copied = HTTPFields()
        copied.append(contentsOf: fields)
        copied.add(name: "Long-\(String(repeating: "n", count: 40))", value: String(repeating: "v", count: 300))
        copied.replaceOrAdd(name: "a", value: "b2")
        copied.remove(name: "G")
        copied.add(fieldAt: 1, of: fields)
        var grown = copied
        grown.removeAll { token, _ in token == .contentType }
        var output: [UInt8] = []
        try HTTP1Serializer.writeFields(of: grown, into: &output)
        let long = "Long-\(String(repeating: "n", count: 40)): \(String(repeating: "v", count: 300))\r\n"
        #expect(
            String(decoding: output, as: UTF8.self)
                == "Host: h\r\nA: b2\r\nC: d\r\nE: f2\r\n" + long + "A: b\r\n")
        for index in 0..<grown.count {
            var line: [UInt8] = []
            try HTTP1Serializer.writeField(at: index, of: grown, into: &line)
            let field = grown.field(at: index)
            #expect(String(decoding: line, as: UTF8.self) == "\(field.name): \(field.value)\r\n")
        }
    }
}
