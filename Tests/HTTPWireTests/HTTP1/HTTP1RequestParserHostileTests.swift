import Testing

@testable import HTTPWire

/// One hostile request input from docs/reliability.md §2.1 and the status the parser must answer.
struct HostileRequestCase: Sendable, CustomTestStringConvertible {
    var id: String
    var input: [UInt8]
    var status: Int
    /// Request heads accepted before the error (chunk errors are found after the head was emitted; smuggling
    /// attempts must be refused before any head).
    var headsBefore: Int = 0
    var limits: HTTP1ParserLimits = .init()

    init(_ id: String, _ input: String, _ status: Int, headsBefore: Int = 0, limits: HTTP1ParserLimits = .init()) {
        self.init(id, bytes(input), status, headsBefore: headsBefore, limits: limits)
    }

    init(_ id: String, _ input: [UInt8], _ status: Int, headsBefore: Int = 0, limits: HTTP1ParserLimits = .init()) {
        self.id = id
        self.input = input
        self.status = status
        self.headsBefore = headsBefore
        self.limits = limits
    }

    var testDescription: String { id }
}

private let post = "POST / HTTP/1.1\r\n" + hostLine
private let chunkedPost = post + "Transfer-Encoding: chunked\r\n\r\n"

private func withHeader(_ line: String) -> String { "GET / HTTP/1.1\r\n" + hostLine + line + "\r\n\r\n" }
private func withHeaderBytes(_ line: [UInt8]) -> [UInt8] {
    bytes("GET / HTTP/1.1\r\n" + hostLine) + line + bytes("\r\n\r\n")
}

let hostileRequestCases: [HostileRequestCase] = [
    // Framing and smuggling.
    .init(
        "H1-01 CL.TE",
        post
            + "Content-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n",
        400),
    .init(
        "H1-02 TE.CL",
        post + "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\nGPOST / HTTP/1.1\r\n\r\n0\r\n\r\n", 400),
    .init("H1-03 CL 5 and 10", post + "Content-Length: 5\r\nContent-Length: 10\r\n\r\nhello", 400),
    .init("H1-04 identical CL twice", post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
    .init("H1-04 CL list 5, 5", post + "Content-Length: 5, 5\r\n\r\nhello", 400),
    .init("H1-05 CL -1", post + "Content-Length: -1\r\n\r\n", 400),
    .init("H1-05 CL +5", post + "Content-Length: +5\r\n\r\nhello", 400),
    .init("H1-05 CL 0x5", post + "Content-Length: 0x5\r\n\r\nhello", 400),
    .init("H1-05 CL empty", post + "Content-Length: \r\n\r\n", 400),
    .init("H1-05 CL 5 5", post + "Content-Length: 5 5\r\n\r\nhello", 400),
    .init("H1-05 CL 1_0", post + "Content-Length: 1_0\r\n\r\n0123456789", 400),
    .init("H1-06 CL 2^64+5", post + "Content-Length: 18446744073709551621\r\n\r\n", 400),
    .init("H1-06 CL 23 nines", post + "Content-Length: 99999999999999999999999\r\n\r\n", 400),
    .init("H1-07 CL over default limit", post + "Content-Length: 10485761\r\n\r\n", 413),
    .init(
        "H1-07 CL over small limit, no body sent", post + "Content-Length: 11\r\n\r\n", 413,
        limits: HTTP1ParserLimits(maxBodyBytes: 10)),
    .init(
        "H1-07 chunked total over limit", chunkedPost + "6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n", 413,
        headsBefore: 1, limits: HTTP1ParserLimits(maxBodyBytes: 10)),
    .init("H1-08 chunk size 17 hex digits", chunkedPost + "10000000000000001\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-08 chunk size over Int64", chunkedPost + "ffffffffffffffff\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-09 chunk size 0x1", chunkedPost + "0x1\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-09 chunk size +1", chunkedPost + "+1\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-09 chunk size -1", chunkedPost + "-1\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-09 chunk size leading space", chunkedPost + " 1\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-09 chunk size g", chunkedPost + "g\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-09 chunk size empty line", chunkedPost + "\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-10 chunk line bare LF", chunkedPost + "1\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-11 chunk extension bare LF", chunkedPost + "1;a\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-11 chunk extension bare CR", chunkedPost + "1;a\rb\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-11 quoted extension with CRLF", chunkedPost + "1;a=\"x\r\ny\"\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-11 extension with spaces", chunkedPost + "1 ; a = b\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-11 extension without name", chunkedPost + "1;=b\r\nx\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-12 chunk data longer than size", chunkedPost + "3\r\nabcde\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init("H1-12 chunk data shorter than size", chunkedPost + "5\r\nabc\r\n0\r\n\r\n", 400, headsBefore: 1),
    .init(
        "H1-12 last chunk without final CRLF", chunkedPost + "1\r\nx\r\n0\r\nGET / HTTP/1.1\r\n", 400, headsBefore: 1),
    .init("H1-12 invalid trailer line", chunkedPost + "1\r\nx\r\n0\r\nbad trailer\r\n\r\n", 400, headsBefore: 1),
    .init("H1-13 chunked, chunked", post + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400),
    .init(
        "H1-13 two TE headers", post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    .init("H1-13 gzip, chunked", post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    .init("H1-13 gzip", post + "Transfer-Encoding: gzip\r\n\r\n", 501),
    .init("H1-13 xchunked", post + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501),
    .init("H1-13 chunked trailing space", post + "Transfer-Encoding: chunked \r\n\r\n0\r\n\r\n", 400),
    .init("H1-13 chunked;param", post + "Transfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n", 400),
    .init("H1-14 leading-space TE line", post + " Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    .init("H1-14 space before colon", post + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
    .init("H1-14 tab-prefixed TE line", post + "\tTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    .init("H1-14 TE value \\x0b prefix", post + "Transfer-Encoding:\u{0B}chunked\r\n\r\n0\r\n\r\n", 400),
    .init("H1-14 TE value \\x0c suffix", post + "Transfer-Encoding: chunked\u{0C}\r\n\r\n0\r\n\r\n", 400),
    .init(
        "H1-14 TE value \\xa0 suffix", bytes(post + "Transfer-Encoding: chunked") + [0xA0] + bytes("\r\n\r\n0\r\n\r\n"),
        400),
    .init("H1-14 X: X LF TE", post + "X: X\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    .init("H1-15 TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    // Line endings and field syntax.
    .init("H1-16 bare LF everywhere", "GET / HTTP/1.1\nHost: localhost\n\n", 400),
    .init("H1-16 bare LF after request line", "GET / HTTP/1.1\n" + hostLine + "\r\n", 400),
    .init("H1-16 bare LF ending the head", "GET / HTTP/1.1\r\n" + hostLine + "\n", 400),
    .init("H1-17 bare CR in value", withHeader("X: a\rb"), 400),
    .init("H1-17 bare CR in request line", "GET /\r HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-18 obs-fold", withHeader("X: a\r\n b"), 400),
    .init("H1-18 obs-fold with tab", withHeader("X: a\r\n\tb"), 400),
    .init("H1-19 NUL in value", withHeader("X: a\u{0}b"), 400),
    .init("H1-19 NUL in name", withHeader("X\u{0}Y: a"), 400),
    .init("H1-19 DEL in value", withHeader("X: a\u{7F}"), 400),
    .init("H1-20 X(Y) name", withHeader("X(Y): a"), 400),
    .init("H1-20 non-ASCII name", withHeaderBytes([0xEF] + bytes("oo: a")), 400),
    .init("H1-20 empty name", withHeader(": a"), 400),
    .init("H1-20 no colon", withHeader("NoColonHere"), 400),
    .init("H1-21 whitespace before first header", "GET / HTTP/1.1\r\n Host: localhost\r\n\r\n", 400),
    // Limits.
    .init(
        "H1-22 64 KiB target", "GET /" + String(repeating: "a", count: 65536) + " HTTP/1.1\r\n" + hostLine + "\r\n", 414
    ),
    .init("H1-22 request line without CRLF over limit", "GET /" + String(repeating: "a", count: 9000), 414),
    .init("H1-23 one 64 KiB header", withHeader("X-Big: " + String(repeating: "b", count: 65536)), 431),
    .init(
        "H1-23 header section over limit",
        withHeader(
            (0..<40).map { "X-\($0): " + String(repeating: "v", count: 500) }.joined(separator: "\r\n")), 431),
    .init("H1-24 200 header lines", withHeader((0..<200).map { "X-\($0): v" }.joined(separator: "\r\n")), 431),
    // Host.
    .init("H1-25 HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400),
    .init("H1-26 two Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    .init("H1-26 Host a b", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
    .init("H1-26 Host a@evil", "GET / HTTP/1.1\r\nHost: a@evil\r\n\r\n", 400),
    .init("H1-26 Host port 99999", "GET / HTTP/1.1\r\nHost: x:99999\r\n\r\n", 400),
    .init("H1-26 Host port not digits", "GET / HTTP/1.1\r\nHost: x:8a\r\n\r\n", 400),
    .init("H1-26 Host unclosed IPv6", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400),
    // Request line.
    .init("H1-27 method G(T", "G(T / HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-27 empty method", " / HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-28 CONNECT origin-form", "CONNECT / HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-30 HTTP/2.0", "GET / HTTP/2.0\r\n" + hostLine + "\r\n", 505),
    .init("H1-30 HTTP/3.0", "GET / HTTP/3.0\r\n" + hostLine + "\r\n", 505),
    .init("H1-30 h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    .init("H1-30 HTTP/1.10", "GET / HTTP/1.10\r\n" + hostLine + "\r\n", 400),
    .init("H1-30 HTTP/01.1", "GET / HTTP/01.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-30 lowercase http/1.1", "GET / http/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-30 HTTP/0.9 (no version)", "GET /\r\n\r\n", 400),
    .init("H1-30 double space before version", "GET /  HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-30 double space after method", "GET  / HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-31 target without slash", "GET index.html HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-31 GET *", "GET * HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-31 fragment", "GET /a#frag HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-31 tab in target", "GET /a\tb HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-31 DEL in target", "GET /a\u{7F} HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-31 non-ASCII target", bytes("GET /") + [0xC3, 0xA9] + bytes(" HTTP/1.1\r\n" + hostLine + "\r\n"), 400),
    .init("H1-31 ftp absolute-form", "GET ftp://x/ HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    // Pipelines and connection start.
    .init(
        "H1-33 garbage after a valid request",
        "GET /ok HTTP/1.1\r\n" + hostLine + "\r\nGARBAGE\r\n\r\nGET /x HTTP/1.1\r\n" + hostLine + "\r\n", 400,
        headsBefore: 1),
    .init(
        "H1-41 too many leading empty lines",
        String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\n" + hostLine + "\r\n", 400),
    .init("H1-41 bare CR before request line", "\rGET / HTTP/1.1\r\n" + hostLine + "\r\n", 400)
]

@Suite struct HTTP1RequestParserHostileTests {
    @Test func tableIsLargeEnough() {
        #expect(hostileRequestCases.count >= 45)
        #expect(Set(hostileRequestCases.map(\.id)).count == hostileRequestCases.count)
    }

    @Test(arguments: hostileRequestCases)
    func rejected(_ testCase: HostileRequestCase) {
        let events = requestEvents(testCase.input, limits: testCase.limits)
        #expect(errorStatus(events) == testCase.status, "\(events.suffix(2))")
        #expect(headCount(events) == testCase.headsBefore)
    }

    @Test(arguments: hostileRequestCases)
    func rejectedTheSameHoweverSplit(_ testCase: HostileRequestCase) {
        let whole = requestEvents(testCase.input, limits: testCase.limits)
        let oneByte = requestEvents(testCase.input, sizes: [1], limits: testCase.limits)
        #expect(oneByte == whole)
        for seed in UInt64(1)...5 {
            #expect(requestEvents(testCase.input, sizes: randomSizes(seed: seed), limits: testCase.limits) == whole)
        }
    }

    @Test func errorIsSticky() {
        var parser = HTTP1RequestParser()
        parser.append(bytes("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"))
        let first = parser.next()
        guard case .error(let error)? = first else {
            Issue.record("expected an error, got \(String(describing: first))")
            return
        }
        #expect(error.status == 400)
        parser.append(bytes("GET / HTTP/1.1\r\n" + hostLine + "\r\n"))
        #expect(parser.next() == .error(error))
        #expect(parser.next() == .error(error))
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func longRequestLineIsRefusedBeforeItsEnd() {
        var parser = HTTP1RequestParser(limits: HTTP1ParserLimits(maxRequestLineBytes: 100))
        parser.append(bytes("GET /" + String(repeating: "a", count: 90)))
        #expect(parser.next() == nil)
        parser.append(bytes(String(repeating: "a", count: 20)))
        #expect(errorStatus([parser.next()].compactMap { $0 }) == 414)
    }

    @Test func largeContentLengthIsRefusedBeforeAnyBody() {
        var parser = HTTP1RequestParser(limits: HTTP1ParserLimits(maxBodyBytes: 100))
        parser.append(bytes(post + "Content-Length: 101\r\n\r\n"))
        #expect(errorStatus([parser.next()].compactMap { $0 }) == 413)
    }

    @Test func hugeChunkSizeNeverTraps() {
        for size in ["7fffffffffffffff", "8000000000000000", "ffffffffffffffff", "0000000000000000f"] {
            let events = requestEvents(bytes(chunkedPost + size + "\r\nx\r\n0\r\n\r\n"))
            #expect(errorStatus(events) == 400 || errorStatus(events) == 413, "\(size)")
        }
    }

    @Test func headerAndLimitBoundaries() {
        // Exactly maxHeaders fields pass; one more is refused.
        let limits = HTTP1ParserLimits(maxHeaders: 5)
        let five = "GET / HTTP/1.1\r\n" + hostLine + (1...4).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        #expect(headCount(requestEvents(bytes(five), limits: limits)) == 1)
        let six = "GET / HTTP/1.1\r\n" + hostLine + (1...5).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        #expect(errorStatus(requestEvents(bytes(six), limits: limits)) == 431)
        // A request line of exactly the limit passes; one byte more is 414.
        let line = "GET /" + String(repeating: "a", count: 100 - 14) + " HTTP/1.1"
        #expect(line.utf8.count == 100)
        let lineLimits = HTTP1ParserLimits(maxRequestLineBytes: 100)
        #expect(headCount(requestEvents(bytes(line + "\r\n" + hostLine + "\r\n"), limits: lineLimits)) == 1)
        let longer = "GET /a" + String(repeating: "a", count: 100 - 14) + " HTTP/1.1\r\n" + hostLine + "\r\n"
        #expect(errorStatus(requestEvents(bytes(longer), limits: lineLimits)) == 414)
        // The header section limit counts every field line and the final CRLF.
        let section = hostLine + "\r\n"
        let exact = HTTP1ParserLimits(maxHeaderBytes: section.utf8.count)
        #expect(headCount(requestEvents(bytes("GET / HTTP/1.1\r\n" + section), limits: exact)) == 1)
        let tight = HTTP1ParserLimits(maxHeaderBytes: section.utf8.count - 1)
        #expect(errorStatus(requestEvents(bytes("GET / HTTP/1.1\r\n" + section), limits: tight)) == 431)
    }
}
