import Testing

@testable import HTTPWire

/// A malformed upstream response from docs/reliability.md §2.5 UP-06 (and UP-09): the parser must report an error.
struct HostileResponseCase: Sendable, CustomTestStringConvertible {
    var id: String
    var input: [UInt8]
    var method: HTTPMethod = .get
    var close = false
    var testDescription: String { id }

    init(_ id: String, _ input: String, method: HTTPMethod = .get, close: Bool = false) {
        self.id = id
        self.input = bytes(input)
        self.method = method
        self.close = close
    }
}

let hostileResponseCases: [HostileResponseCase] = [
    .init("UP-06 status 2OO", "HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 garbage status line", "HELLO WORLD\r\n\r\n"),
    .init("UP-06 no space after status", "HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 two-digit status", "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 status 099", "HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 status 600", "HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 lowercase version", "http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 HTTP/2.0 status line", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 control in reason", "HTTP/1.1 200 O\u{1}K\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare CR in reason", "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare CR ending reason", "HTTP/1.1 200 OK\r\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare CR for reason separator", "HTTP/1.1 200\rOK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare CR in status code", "HTTP/1.1 2\r0 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare CR for version separator", "HTTP/1.1\r200 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare CR in version", "HTTP/1\r1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 CL+TE", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    .init(
        "UP-06 CL+TE on HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        method: .head),
    .init("UP-06 differing duplicate CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
    .init("UP-06 differing CL list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!"),
    .init("UP-06 invalid CL", "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello"),
    .init("UP-06 overflowing CL", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
    .init("UP-06 obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 bare LF", "HTTP/1.1 200 OK\nContent-Length: 0\n\n"),
    .init("UP-06 bare LF in headers", "HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n"),
    .init("UP-06 bare CR in value", "HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 NUL in header", "HTTP/1.1 200 OK\r\nX: a\u{0}b\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-06 space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n"),
    .init("UP-06 invalid chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
    .init("UP-06 chunk size 0x5", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"),
    .init("UP-06 chunk missing CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n"),
    .init("UP-06 unknown TE", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx"),
    .init("UP-06 TE gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
    .init(
        "UP-06 TE chunked twice",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    .init("UP-06 TE on HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    .init(
        "UP-06 more headers than the limit",
        "HTTP/1.1 200 OK\r\n" + (0..<101).map { "X-\($0): v\r\n" }.joined() + "Content-Length: 0\r\n\r\n"),
    .init("UP-09 huge header", "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "b", count: 40000) + "\r\n\r\n"),
    .init("UP-06 HTTP/0.9 response", "<html>hello</html>\n"),
    .init("UP-06 HTTP/0.9 response cut by EOF", "<html>hello</html>", close: true),
    .init(
        "UP-06 101 without upgrade",
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
    .init("UP-06 leading empty line", "\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    .init("UP-04 truncated Content-Length body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", close: true),
    .init(
        "UP-04 truncated chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        close: true),
    .init(
        "UP-04 truncated inside a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", close: true),
    .init("UP-04 truncated head", "HTTP/1.1 200 OK\r\nContent-Le", close: true),
    .init("UP-03 closed before any byte", "", close: true)
]

private func response(
    _ status: Int, _ headers: [(String, String)], reason: String? = nil,
    version: HTTPVersion = .http1_1
) -> HTTPResponseHead {
    HTTPResponseHead(status: status, reason: reason, version: version, headers: HTTPFields(headers))
}

@Suite struct HTTP1ResponseParserTests {
    @Test(arguments: hostileResponseCases)
    func rejected(_ testCase: HostileResponseCase) {
        let whole = responseEvents(testCase.input, method: testCase.method, close: testCase.close).events
        guard case .error(let error)? = whole.last else {
            Issue.record("expected an error, got \(whole)")
            return
        }
        #expect(error.status == 502)
        // Never a head that looks complete for framing errors found in the head.
        let oneByte = responseEvents(testCase.input, method: testCase.method, sizes: [1], close: testCase.close).events
        #expect(oneByte == whole)
        let random = responseEvents(
            testCase.input, method: testCase.method, sizes: randomSizes(seed: 9),
            close: testCase.close
        ).events
        #expect(random == whole)
    }

    @Test func tableIsLargeEnough() {
        #expect(hostileResponseCases.count >= 30)
    }

    @Test func contentLengthResponse() {
        let input = bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: up\r\n\r\nhello")
        let expected: [HTTP1ResponseEvent] = [
            .head(response(200, [("Content-Length", "5"), ("Server", "up")]), .contentLength(5)),
            .body(bytes("hello")), .end
        ]
        for sizes in [nil, [1], randomSizes(seed: 3)] {
            let (events, parser) = responseEvents(input, sizes: sizes)
            #expect(events == expected)
            #expect(!parser.hasUnexpectedBytes)
            #expect(!parser.isAwaitingResponse)
        }
    }

    @Test func chunkedResponseWithTrailers() {
        let input = bytes(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;a=b\r\nWiki\r\n5\r\npedia\r\n0\r\nExpires: never\r\n\r\n"
        )
        let expected: [HTTP1ResponseEvent] = [
            .head(response(200, [("Transfer-Encoding", "chunked")]), .chunked), .body(bytes("Wikipedia")), .end
        ]
        #expect(responseEvents(input).events == expected)
        #expect(responseEvents(input, sizes: [1]).events == expected)
    }

    @Test func identicalDuplicateContentLengthIsAccepted() {
        let input = bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok")
        let events = responseEvents(input).events
        #expect(events.count == 3)
        #expect(events.last == .end)
        if case .head(_, let framing)? = events.first {
            #expect(framing == .contentLength(2))
        } else {
            Issue.record("no head")
        }
    }

    @Test func informationalResponsesThenFinal() {
        let input = bytes(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                + "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        let expected: [HTTP1ResponseEvent] = [
            .informational(response(100, [])),
            .informational(response(103, [("Link", "</a.css>; rel=preload")], reason: "Early Hints")),
            .head(response(201, [("Content-Length", "0")]), .contentLength(0)), .end
        ]
        #expect(responseEvents(input).events == expected)
        #expect(responseEvents(input, sizes: [1]).events == expected)
    }

    @Test func a101ToAnUpgradeIsTheFinalResponseAndEverythingAfterItIsBodyUntilClose() {
        let tunnel = "\u{81}\u{5}hello, then HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        let input = bytes(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n" + tunnel)
        let expected: [HTTP1ResponseEvent] = [
            .head(
                response(101, [("Upgrade", "websocket"), ("Connection", "Upgrade")], reason: "Switching Protocols"),
                .untilClose),
            .body(bytes(tunnel)), .end
        ]
        for sizes in [nil, [1], randomSizes(seed: 9)] {
            #expect(responseEvents(input, sizes: sizes, close: true, upgrade: true).events == expected)
        }
        guard
            case .error? = responseEvents(input, close: true, limits: .init(maxBodyBytes: 4), upgrade: true).events.last
        else {
            Issue.record("a collected tunnel keeps the body limit")
            return
        }
        guard case .error? = responseEvents(input, close: true).events.last else {
            Issue.record("a 101 without an upgrade request must stay an error")
            return
        }
    }

    @Test func aCloseDelimitedBodyKeepsTheBodyLimit() {
        let input = bytes("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "x", count: 10))
        #expect(responseEvents(input, close: true, limits: .init(maxBodyBytes: 10)).events.last == .end)
        guard case .error(let error)? = responseEvents(input, close: true, limits: .init(maxBodyBytes: 9)).events.last
        else {
            Issue.record("a body read until close must not grow past the limit")
            return
        }
        #expect(error.status == 502)
    }

    @Test func tooManyInformationalResponses() {
        let input = bytes(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 20))
        guard case .error? = responseEvents(input).events.last else {
            Issue.record("expected an error")
            return
        }
    }

    @Test func headResponseHasNoBodyEvenWithContentLength() {
        let input = bytes("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")
        let (events, parser) = responseEvents(input, method: .head)
        #expect(events == [.head(response(200, [("Content-Length", "1234")]), .none), .end])
        #expect(!parser.hasUnexpectedBytes)
        let chunked = responseEvents(bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), method: .head)
        #expect(chunked.events == [.head(response(200, [("Transfer-Encoding", "chunked")]), .none), .end])
    }

    @Test func noBodyStatuses() {
        for status in [204, 304] {
            let input = bytes(
                "HTTP/1.1 \(status) \(HTTPStatus.reasonPhrase(for: status))\r\nContent-Length: 10\r\n\r\n")
            let (events, parser) = responseEvents(input)
            #expect(events == [.head(response(status, [("Content-Length", "10")]), .none), .end])
            #expect(!parser.hasUnexpectedBytes)
        }
    }

    @Test func bodyOnHeadOr204IsUnexpected() {
        // UP-07: a body where none may be: the bytes are discarded and the connection must not be reused.
        let head = responseEvents(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), method: .head)
        #expect(head.events == [.head(response(200, [("Content-Length", "5")]), .none), .end])
        #expect(head.parser.hasUnexpectedBytes)
        let noContent = responseEvents(bytes("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"))
        #expect(noContent.events == [.head(response(204, []), .none), .end])
        #expect(noContent.parser.hasUnexpectedBytes)
        let notModified = responseEvents(bytes("HTTP/1.1 304 Not Modified\r\n\r\nx"), sizes: [1])
        #expect(notModified.parser.hasUnexpectedBytes)
    }

    @Test func bytesBeyondContentLengthAreUnexpected() {
        // UP-07: response-queue poisoning; extra bytes are never parsed as the next response.
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        parser.append(
            bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"))
        #expect(parser.next() == .head(response(200, [("Content-Length", "2")]), .contentLength(2)))
        #expect(parser.next() == .body(bytes("ok")))
        #expect(parser.next() == .end)
        #expect(parser.hasUnexpectedBytes)
        #expect(parser.bufferedByteCount == 0)
        #expect(parser.next() == nil)
        parser.expectResponse(to: .get)
        guard case .error(let error)? = parser.next() else {
            Issue.record("a poisoned parser must not parse another response")
            return
        }
        #expect(error.status == 502)
    }

    @Test func bytesWhileIdleAreUnexpected() {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        parser.append(bytes("HTTP/1.1 204 No Content\r\n\r\n"))
        #expect(parser.next() == .head(response(204, []), .none))
        #expect(parser.next() == .end)
        #expect(!parser.hasUnexpectedBytes)
        parser.append(bytes("X"))
        #expect(parser.hasUnexpectedBytes)
        #expect(parser.next() == nil)
    }

    @Test func keepAliveReuseAcrossResponses() {
        var parser = HTTP1ResponseParser()
        for index in 0..<3 {
            parser.expectResponse(to: .get)
            #expect(!parser.hasReceivedResponseBytes)
            parser.append(bytes("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n\(index)"))
            #expect(parser.hasReceivedResponseBytes)
            #expect(parser.next() == .head(response(200, [("Content-Length", "1")]), .contentLength(1)))
            #expect(parser.next() == .body(bytes("\(index)")))
            #expect(parser.next() == .end)
        }
        #expect(!parser.hasUnexpectedBytes)
        #expect(parser.connectionClosed() == nil)
    }

    @Test func untilCloseBodyEndsAtEOF() {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        parser.append(bytes("HTTP/1.0 200 OK\r\n\r\nsome"))
        #expect(parser.next() == .head(response(200, [], version: .http1_0), .untilClose))
        #expect(parser.next() == .body(bytes("some")))
        #expect(parser.next() == nil)
        parser.append(bytes(" more"))
        #expect(parser.next() == .body(bytes(" more")))
        #expect(parser.connectionClosed() == .end)
        #expect(parser.next() == nil)

        // Buffered body bytes come first, then `.end`.
        var second = HTTP1ResponseParser()
        second.expectResponse(to: .get)
        second.append(bytes("HTTP/1.1 200 OK\r\n\r\ntail"))
        #expect(second.next() == .head(response(200, []), .untilClose))
        second.append(bytes("!"))
        #expect(second.connectionClosed() == .body(bytes("tail!")))
        #expect(second.next() == .end)
    }

    @Test func eofBeforeAnyByteIsDistinguishable() {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        guard case .error? = parser.connectionClosed() else {
            Issue.record("expected an error")
            return
        }
        #expect(!parser.hasReceivedResponseBytes)
        var idle = HTTP1ResponseParser()
        #expect(idle.connectionClosed() == nil)
    }

    @Test func bodyLimit() {
        let limits = HTTP1ResponseParser.Limits(maxBodyBytes: 4)
        let big = responseEvents(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), limits: limits).events
        guard case .error? = big.last else {
            Issue.record("CL over the limit must fail")
            return
        }
        let chunked = responseEvents(
            bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"),
            limits: limits
        ).events
        guard case .error? = chunked.last else {
            Issue.record("chunked over the limit must fail")
            return
        }
        #expect(chunked.contains(.body(bytes("abc"))))
    }

    @Test func statusLineWithoutReason() {
        let events = responseEvents(bytes("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")).events
        #expect(events == [.head(response(200, [("Content-Length", "0")], reason: ""), .contentLength(0)), .end])
        let empty = responseEvents(bytes("HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n")).events
        #expect(empty == [.head(response(404, [("Content-Length", "0")], reason: ""), .contentLength(0)), .end])
    }

    @Test func reasonPhraseStandardOrNot() {
        // The static bytes the parser compares with are the standard phrase, for every code.
        for status in 100...599 {
            #expect(HTTPStatus.reasonPhraseBytes(for: status).description == HTTPStatus.reasonPhrase(for: status))
        }
        for (line, reason) in [
            ("HTTP/1.1 200 OK", "OK"), ("HTTP/1.1 200 ok", "ok"), ("HTTP/1.1 200 OK ", "OK "),
            ("HTTP/1.1 200 Fine", "Fine"), ("HTTP/1.1 404 Not Found", "Not Found"), ("HTTP/1.1 404 OK", "OK"),
            ("HTTP/1.1 599 Whatever", "Whatever"), ("HTTP/1.1 500 Internal Server Erro", "Internal Server Erro")
        ] {
            let status = Int(line.split(separator: " ")[1]) ?? 0
            let events = responseEvents(bytes(line + "\r\nContent-Length: 0\r\n\r\n")).events
            #expect(
                events == [.head(response(status, [("Content-Length", "0")], reason: reason), .contentLength(0)), .end])
        }
    }
}
