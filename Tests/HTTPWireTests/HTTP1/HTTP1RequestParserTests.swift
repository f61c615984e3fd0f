import Testing

@testable import HTTPWire

/// A valid request stream and the exact events it must produce.
struct ValidRequestCase: Sendable, CustomTestStringConvertible {
    var id: String
    var input: [UInt8]
    var events: [HTTP1RequestEvent]
    var testDescription: String { id }

    init(_ id: String, _ input: String, _ events: [HTTP1RequestEvent]) {
        self.init(id, bytes(input), events)
    }

    init(_ id: String, _ input: [UInt8], _ events: [HTTP1RequestEvent]) {
        self.id = id
        self.input = input
        self.events = events
    }
}

private func head(
    _ method: HTTPMethod, _ target: String, _ version: HTTPVersion, _ headers: [(String, String)]
) -> HTTPRequestHead {
    HTTPRequestHead(method: method, target: target, version: version, headers: HTTPFields(headers))
}

private func head(_ method: HTTPMethod, _ target: String, _ headers: [(String, String)]) -> HTTPRequestHead {
    head(method, target, .http1_1, headers)
}

private let localhost = ("Host", "localhost")

let validRequestCases: [ValidRequestCase] = [
    .init(
        "simple GET", "GET /index.html?q=1 HTTP/1.1\r\nHost: localhost\r\nAccept: */*\r\n\r\n",
        [
            .head(head(.get, "/index.html?q=1", [localhost, ("Accept", "*/*")]), .none), .end
        ]),
    .init(
        "POST with Content-Length", "POST /submit HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello",
        [
            .head(head(.post, "/submit", [localhost, ("Content-Length", "5")]), .contentLength(5)),
            .body(bytes("hello")), .end
        ]),
    .init(
        "Content-Length 0", "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 000\r\n\r\n",
        [
            .head(head(.post, "/", [localhost, ("Content-Length", "000")]), .contentLength(0)), .end
        ]),
    .init(
        "chunked with extensions and trailers",
        "POST /up HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;ext=1;name=\"q\\\"v\";flag\r\nhello\r\n6\r\n world\r\n0;last\r\nX-Checksum: abc\r\nX-More: 1\r\n\r\n",
        [
            .head(head(.post, "/up", [localhost, ("Transfer-Encoding", "chunked")]), .chunked),
            .body(bytes("hello world")), .end
        ]),
    .init(
        "chunked, upper-case coding and hex sizes",
        "PUT /x HTTP/1.1\r\nHost: localhost\r\nTRANSFER-ENCODING: CHUNKED\r\n\r\nA\r\n0123456789\r\n00000001\r\n!\r\n0\r\n\r\n",
        [
            .head(head(.put, "/x", [localhost, ("TRANSFER-ENCODING", "CHUNKED")]), .chunked),
            .body(bytes("0123456789!")), .end
        ]),
    .init("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", [.head(head(.get, "/", .http1_0, []), .none), .end]),
    .init(
        "H1-29 HTTP/1.2 read as 1.1", "GET / HTTP/1.2\r\nHost: localhost\r\n\r\n",
        [
            .head(head(.get, "/", [localhost]), .none), .end
        ]),
    .init(
        "H1-27 lowercase get kept as get", "get / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        [
            .head(head(HTTPMethod("get"), "/", [localhost]), .none), .end
        ]),
    .init(
        "H1-28 unknown method FOO passed through", "FOO /x HTTP/1.1\r\nHost: localhost\r\n\r\n",
        [
            .head(head(HTTPMethod("FOO"), "/x", [localhost]), .none), .end
        ]),
    .init(
        "H1-28 CONNECT authority-form", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        [
            .head(head(.connect, "example.com:443", [("Host", "example.com:443")]), .none), .end
        ]),
    .init(
        "OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n",
        [
            .head(head(.options, "*", [localhost]), .none), .end
        ]),
    .init(
        "absolute-form target", "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n",
        [
            .head(head(.get, "http://example.com/a?b", [("Host", "example.com")]), .none), .end
        ]),
    .init(
        "H1-41 leading empty lines skipped", "\r\n\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        [
            .head(head(.get, "/", [localhost]), .none), .end
        ]),
    .init(
        "OWS trimmed, empty value, tab inside value",
        "GET / HTTP/1.1\r\nHost:localhost\r\nX-A: \t a\tb \t\r\nX-Empty:\r\nX-Spaces:   \r\n\r\n",
        [
            .head(head(.get, "/", [("Host", "localhost"), ("X-A", "a\tb"), ("X-Empty", ""), ("X-Spaces", "")]), .none),
            .end
        ]),
    .init(
        "obs-text in a value",
        bytes("GET / HTTP/1.1\r\nHost: localhost\r\nX-Name: caf") + [0xC3, 0xA9]
            + bytes("\r\n\r\n"),
        [
            .head(head(.get, "/", [localhost, ("X-Name", "café")]), .none), .end
        ]),
    .init(
        "Host forms",
        "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\nGET / HTTP/1.1\r\nHost: 10.0.0.1:80\r\n\r\n"
            + "GET / HTTP/1.1\r\nHost: \r\n\r\n",
        [
            .head(head(.get, "/", [("Host", "[::1]:8080")]), .none), .end,
            .head(head(.get, "/", [("Host", "10.0.0.1:80")]), .none), .end,
            .head(head(.get, "/", [("Host", "")]), .none), .end
        ]),
    .init(
        "H1-35 Expect 100-continue passed through",
        "POST / HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
        [
            .head(
                head(.post, "/", [localhost, ("Expect", "100-continue"), ("Content-Length", "5")]), .contentLength(5)),
            .body(bytes("hello")), .end
        ]),
    .init(
        "H1-37 GET with a body is framed, not split",
        "GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 30\r\n\r\n"
            + "GET /smuggled HTTP/1.1\r\nX: 1\r\n",
        [
            .head(head(.get, "/", [localhost, ("Content-Length", "30")]), .contentLength(30)),
            .body(bytes("GET /smuggled HTTP/1.1\r\nX: 1\r\n")), .end
        ]),
    .init(
        "pipelined POST then GET",
        "POST /a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc"
            + "GET /b HTTP/1.1\r\nHost: localhost\r\n\r\n",
        [
            .head(head(.post, "/a", [localhost, ("Content-Length", "3")]), .contentLength(3)), .body(bytes("abc")),
            .end,
            .head(head(.get, "/b", [localhost]), .none), .end
        ])
]

@Suite struct HTTP1RequestParserTests {
    @Test(arguments: validRequestCases)
    func parsesExactly(_ testCase: ValidRequestCase) {
        #expect(requestEvents(testCase.input) == testCase.events)
    }

    @Test(arguments: validRequestCases)
    func parsesIdenticallyOneByteAtATime(_ testCase: ValidRequestCase) {
        #expect(requestEvents(testCase.input, sizes: [1]) == testCase.events)
    }

    @Test(arguments: validRequestCases)
    func parsesIdenticallyInRandomSplits(_ testCase: ValidRequestCase) {
        for seed in UInt64(1)...20 {
            let sizes = randomSizes(seed: seed &* 7919 &+ UInt64(testCase.input.count))
            #expect(requestEvents(testCase.input, sizes: sizes) == testCase.events, "seed \(seed)")
        }
    }

    @Test func bodyBytesAreEmittedAsTheyArrive() {
        var parser = HTTP1RequestParser()
        parser.append(bytes("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nabc"))
        #expect(parser.next() == .head(head(.post, "/", [localhost, ("Content-Length", "10")]), .contentLength(10)))
        #expect(parser.next() == .body(bytes("abc")))
        #expect(parser.next() == nil)
        #expect(parser.isMidRequest)
        parser.append(bytes("defghij"))
        #expect(parser.next() == .body(bytes("defghij")))
        #expect(parser.next() == .end)
        #expect(!parser.isMidRequest)
        #expect(parser.next() == nil)
    }

    @Test func chunkDataIsEmittedBeforeTheChunkCompletes() {
        var parser = HTTP1RequestParser()
        parser.append(bytes("POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabcd"))
        #expect(parser.next() == .head(head(.post, "/", [localhost, ("Transfer-Encoding", "chunked")]), .chunked))
        #expect(parser.next() == .body(bytes("abcd")))
        #expect(parser.next() == nil)
        parser.append(bytes("efghijklmnop\r\n0\r\n\r\n"))
        #expect(parser.next() == .body(bytes("efghijklmnop")))
        #expect(parser.next() == .end)
        #expect(parser.next() == nil)
    }

    @Test func twoPipelinedRequestsInOrder() {
        let input = bytes("GET /1 HTTP/1.1\r\n" + hostLine + "\r\nGET /2 HTTP/1.1\r\n" + hostLine + "\r\n")
        var parser = HTTP1RequestParser()
        parser.append(input)
        #expect(parser.next() == .head(head(.get, "/1", [localhost]), .none))
        #expect(parser.hasBufferedRequestBytes)
        #expect(parser.next() == .end)
        #expect(parser.next() == .head(head(.get, "/2", [localhost]), .none))
        #expect(parser.next() == .end)
        #expect(parser.next() == nil)
        #expect(!parser.hasBufferedRequestBytes)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func sixteenPipelinedRequestsInOrder() {
        var input: [UInt8] = []
        var expected: [HTTP1RequestEvent] = []
        for index in 0..<16 {
            if index % 3 == 0 {
                let body = "body-\(index)"
                input += bytes(
                    "POST /r\(index) HTTP/1.1\r\n" + hostLine + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
                expected += [
                    .head(
                        head(.post, "/r\(index)", [localhost, ("Content-Length", "\(body.utf8.count)")]),
                        .contentLength(Int64(body.utf8.count))),
                    .body(bytes(body)), .end
                ]
            } else if index % 3 == 1 {
                input += bytes(
                    "PUT /r\(index) HTTP/1.1\r\n" + hostLine + "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
                expected += [
                    .head(head(.put, "/r\(index)", [localhost, ("Transfer-Encoding", "chunked")]), .chunked),
                    .body(bytes("ok")), .end
                ]
            } else {
                input += bytes("GET /r\(index) HTTP/1.1\r\n" + hostLine + "X-Request-Id: \(index)\r\n\r\n")
                expected += [.head(head(.get, "/r\(index)", [localhost, ("X-Request-Id", "\(index)")]), .none), .end]
            }
        }
        #expect(requestEvents(input) == expected)
        #expect(requestEvents(input, sizes: [1]) == expected)
        #expect(requestEvents(input, sizes: randomSizes(seed: 42, maxPiece: 90)) == expected)
        #expect(expected.filter { if case .head = $0 { return true } else { return false } }.count == 16)
    }

    @Test func expectContinueDetection() {
        #expect(head(.post, "/", [localhost, ("Expect", "100-continue")]).expectsContinue)
        #expect(head(.post, "/", [localhost, ("expect", "100-Continue")]).expectsContinue)
        #expect(!head(.post, "/", [localhost]).expectsContinue)
        #expect(!head(.post, "/", .http1_0, [("Expect", "100-continue")]).expectsContinue)
        #expect(!head(.post, "/", [localhost, ("Expect", "foo")]).expectsContinue)
        #expect(head(.post, "/", [localhost, ("Expect", "foo")]).hasUnsupportedExpectation)
        #expect(!head(.post, "/", [localhost, ("Expect", "100-continue")]).hasUnsupportedExpectation)

        // The parser passes the header through and then waits for the body.
        var parser = HTTP1RequestParser()
        parser.append(bytes("POST / HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"))
        guard case .head(let parsed, let framing)? = parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(parsed.expectsContinue)
        #expect(framing == .contentLength(5))
        #expect(parser.next() == nil)
        #expect(parser.isMidRequest)
    }

    @Test func truncatedBodyLeavesTheRequestOpen() {
        // H1-40: CL 5 with 3 bytes; the server sees isMidRequest at EOF and answers 400 / closes.
        var parser = HTTP1RequestParser()
        parser.append(bytes("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nabc"))
        #expect(parser.next() == .head(head(.post, "/", [localhost, ("Content-Length", "5")]), .contentLength(5)))
        #expect(parser.next() == .body(bytes("abc")))
        #expect(parser.next() == nil)
        #expect(parser.isMidRequest)
    }

    @Test func emptyLinesOnlyAreNotARequest() {
        // H1-41: an empty connection or CRLF only closes silently.
        var parser = HTTP1RequestParser()
        #expect(!parser.isMidRequest)
        parser.append(bytes("\r\n\r\n"))
        #expect(!parser.isMidRequest)
        #expect(parser.next() == nil)
        #expect(!parser.isMidRequest)
        parser.append(bytes("G"))
        #expect(parser.isMidRequest)
        #expect(parser.next() == nil)
        #expect(parser.isMidRequest)
    }

    @Test func unsafeBufferAppendMatchesArrayAppend() {
        let input = bytes("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\nhi")
        var parser = HTTP1RequestParser()
        input.withUnsafeBytes { parser.append($0) }
        var events: [HTTP1RequestEvent] = []
        while let event = parser.next() { events.append(event) }
        #expect(events == requestEvents(input))
        #expect(events.count == 3)
    }

    @Test func longStreamCompactsItsBuffer() {
        // Many requests through one parser, appended in pieces, keep the buffer small.
        var parser = HTTP1RequestParser()
        let request = bytes(
            "POST /x HTTP/1.1\r\n" + hostLine + "Content-Length: 100\r\n\r\n" + String(repeating: "z", count: 100))
        var ends = 0
        var bodyBytes = 0
        for _ in 0..<2000 {
            parser.append(request)
            while let event = parser.next() {
                switch event {
                case .end: ends += 1
                case .body(let chunk): bodyBytes += chunk.count
                case .error(let error):
                    Issue.record("unexpected \(error)")
                    return
                case .head: break
                }
            }
        }
        #expect(ends == 2000)
        #expect(bodyBytes == 200_000)
        #expect(parser.bufferedByteCount == 0)
    }
}
