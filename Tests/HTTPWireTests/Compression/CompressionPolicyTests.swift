import Testing

@testable import HTTPWire

@Suite struct CompressionPolicyTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var method: HTTPMethod = .get
        var status = 200
        var headers: [(String, String)] = [("Content-Type", "application/json"), ("Content-Length", "5000")]
        var acceptEncoding: String? = "gzip, deflate"
        var expected: CompressionPolicy.Decision
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "json gzip", expected: .compress(.gzip)),
        Case(name: "deflate only", acceptEncoding: "deflate", expected: .compress(.deflate)),
        Case(name: "no accept-encoding", acceptEncoding: nil, expected: .identity(varyOnAcceptEncoding: true)),
        Case(name: "HEAD, decided as its GET", method: .head, expected: .compress(.gzip)),
        Case(name: "204", status: 204, expected: .identity(varyOnAcceptEncoding: false)),
        Case(name: "304", status: 304, expected: .identity(varyOnAcceptEncoding: false)),
        Case(name: "206", status: 206, expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "content-range", headers: [("Content-Type", "text/plain"), ("Content-Range", "bytes 0-9/100")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "already encoded", headers: [("Content-Type", "text/html"), ("Content-Encoding", "br")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "identity encoding set", headers: [("Content-Type", "text/html"), ("Content-Encoding", "identity")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "too small", headers: [("Content-Type", "text/html"), ("Content-Length", "100")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "unknown length", headers: [("Content-Type", "text/html; charset=utf-8")], expected: .compress(.gzip)),
        Case(
            name: "image/png", headers: [("Content-Type", "image/png")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(name: "svg", headers: [("Content-Type", "image/svg+xml")], expected: .compress(.gzip)),
        Case(name: "problem+json", headers: [("Content-Type", "application/problem+json")], expected: .compress(.gzip)),
        Case(name: "atom+xml", headers: [("Content-Type", "Application/Atom+XML")], expected: .compress(.gzip)),
        Case(name: "javascript", headers: [("Content-Type", "application/javascript")], expected: .compress(.gzip)),
        Case(name: "xml", headers: [("Content-Type", "application/xml")], expected: .compress(.gzip)),
        Case(
            name: "event-stream", headers: [("Content-Type", "text/event-stream")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(name: "no content-type", headers: [], expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "no-transform", headers: [("Content-Type", "text/plain"), ("Cache-Control", "public, no-transform")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "bad content-length", headers: [("Content-Type", "text/plain"), ("Content-Length", "12x")],
            expected: .identity(varyOnAcceptEncoding: false)),
        Case(
            name: "gzip refused", acceptEncoding: "gzip;q=0, deflate;q=0",
            expected: .identity(varyOnAcceptEncoding: true))
    ]

    @Test(arguments: cases)
    func decisions(_ c: Case) {
        var request = HTTPFields()
        if let value = c.acceptEncoding { request.add(name: "Accept-Encoding", value: value) }
        let response = HTTPResponseHead(status: c.status, headers: HTTPFields(c.headers))
        #expect(
            CompressionPolicy().decide(requestMethod: c.method, requestHeaders: request, response: response)
                == c.expected)
    }

    @Test func applyRewritesHead() {
        var head = HTTPResponseHead(
            status: 200,
            headers: [
                "Content-Type": "text/plain", "Content-Length": "5000", "ETag": "\"abc\"", "Vary": "Origin"
            ])
        CompressionPolicy().apply(.gzip, to: &head)
        #expect(head.headers.first(name: "content-encoding") == "gzip")
        #expect(!head.headers.contains(name: "content-length"))
        #expect(head.headers["vary"] == ["Origin, Accept-Encoding"], "merged into the existing Vary")
        #expect(head.headers.first(name: "etag") == "W/\"abc\"")

        var again = head
        CompressionPolicy().apply(.gzip, to: &again)
        #expect(again.headers["vary"] == ["Origin, Accept-Encoding"])
        #expect(again.headers.first(name: "etag") == "W/\"abc\"")

        var star = HTTPResponseHead(status: 200, headers: ["Vary": "*"])
        CompressionPolicy.addVary(to: &star)
        #expect(star.headers["vary"] == ["*"])
    }

    @Test func rangeRequestsAreNotCompressed() {
        let request: HTTPFields = ["Accept-Encoding": "gzip", "Range": "bytes=0-99"]
        let response = HTTPResponseHead(status: 200, headers: ["Content-Type": "text/plain", "Content-Length": "5000"])
        #expect(
            CompressionPolicy().decide(requestMethod: .get, requestHeaders: request, response: response)
                == .identity(varyOnAcceptEncoding: false))
    }

    @Test func varyWithSeveralFieldsIsMergedIntoOne() {
        var head = HTTPResponseHead(status: 200, headers: HTTPFields([("Vary", "Origin"), ("Vary", "Cookie")]))
        CompressionPolicy.addVary(to: &head)
        #expect(head.headers["vary"] == ["Origin, Cookie, Accept-Encoding"])
        var fresh = HTTPResponseHead(status: 200)
        CompressionPolicy.addVary(to: &fresh)
        #expect(fresh.headers["vary"] == ["Accept-Encoding"])
    }

    @Test func defaultLevelIsNginxDefault() {
        #expect(CompressionPolicy().level == 1)
    }
}
