import Testing

@testable import HTTPWire

@Suite struct HTTP2RequestValidationTests {
    /// A request header block as the session's callbacks deliver it, pseudo-headers first.
    private func received(
        method: String = "GET", scheme: String? = "https", authority: String? = "a", path: String? = "/",
        _ regular: [(String, String)] = []
    ) -> Result<HTTP2ReceivedRequest, RequestError> {
        var fields: [(name: String, value: String)] = [(":method", method)]
        if let scheme { fields.append((":scheme", scheme)) }
        if let authority { fields.append((":authority", authority)) }
        if let path { fields.append((":path", path)) }
        fields += regular.map { (name: $0.0, value: $0.1) }
        return HTTP2Validation.validateRequest(fields)
    }

    @Test func theHTTP1FormHasOneHostFirstAndJoinsCookies() throws {
        let request = try received(
            method: "POST", authority: "api.example.com:8443", path: "/v1/items?x=1",
            [
                ("cookie", "a=1"), ("content-type", "application/json"), ("cookie", "b=2"),
                ("te", "trailers"), ("host", "api.example.com:8443")
            ]
        ).get()
        let h1 = request.head
        #expect(h1.method == .post)
        #expect(h1.target == "/v1/items?x=1")
        #expect(h1.version == .http2)
        #expect(h1.headers.map(\.name) == ["Host", "cookie", "content-type"])
        #expect(h1.headers["host"] == ["api.example.com:8443"])
        #expect(h1.headers["cookie"] == ["a=1; b=2"])
        #expect(request.extendedProtocol == nil)
    }

    @Test func anHTTP1FormWithoutCookiesKeepsTheFieldsInOrder() throws {
        let h1 = try received([("accept", "*/*"), ("cookie", "only=1"), ("x-b", "2"), ("x-a", "1")]).get().head
        #expect(h1.headers.map(\.name) == ["Host", "accept", "cookie", "x-b", "x-a"])
        #expect(h1.headers.map(\.value) == ["a", "*/*", "only=1", "2", "1"])
    }

    @Test func anythingThatCouldInjectALineIsRefused() {
        let bad: [Result<HTTP2ReceivedRequest, RequestError>] = [
            received(path: "/a HTTP/1.1\r\nX: y"),
            received(authority: "a\r\nX: y"),
            received(method: "GET /"),
            received([("x", "1\r\nInjected: 2")]),
            received([("x y", "1")]),
            received([("x:y", "1")]),
            received([("host", "b")]),
            received([("host", "a"), ("host", "a")]),
            received(authority: nil),
            received(path: "relative"),
            received(path: nil),
            received(scheme: nil),
            received(scheme: "ht tp"),
            received([("te", "gzip")]),
            received([("connection", "close")])
        ]
        for result in bad {
            #expect(throws: RequestError.self) { _ = try result.get() }
        }
    }

    @Test func aHostFieldWithoutAuthorityBecomesTheFirstHost() throws {
        let h1 = try received(authority: nil, [("accept", "*/*"), ("host", "h.example")]).get().head
        #expect(h1.headers.map(\.name) == ["Host", "accept"])
        #expect(h1.headers["host"] == ["h.example"])
    }

    @Test func aConnectsTargetIsItsAuthority() throws {
        let request = try received(method: "CONNECT", scheme: nil, authority: "db.internal:5432", path: nil).get()
        #expect(request.head.target == "db.internal:5432")
        #expect(request.head.headers["host"] == ["db.internal:5432"])
        let tunnel = try HTTP2Validation.validateRequest([
            (":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "a"),
            (":path", "/chat")
        ]).get()
        #expect(tunnel.extendedProtocol == "websocket")
        #expect(tunnel.head.target == "/chat")
    }

    @Test func aConnectsCookiesAreJoinedToo() throws {
        let request = try received(
            method: "CONNECT", scheme: nil, authority: "db.internal:5432", path: nil,
            [("cookie", "a=1"), ("cookie", "b=2")]
        ).get()
        #expect(request.head.headers["cookie"] == ["a=1; b=2"])
    }

    @Test func theDeclaredLengthIsReadOnce() throws {
        #expect(try received(method: "POST", [("content-length", "42")]).get().contentLength == 42)
        let repeated = try received(method: "POST", [("content-length", "7"), ("content-length", "7")]).get()
        #expect(repeated.contentLength == 7)
        #expect(try received().get().contentLength == nil)
    }

    @Test func anUncommonMethodKeepsItsSpelling() throws {
        #expect(try received(method: "PROPFIND").get().head.method == HTTPMethod("PROPFIND"))
        #expect(try received(method: "DELETE").get().head.method == .delete)
    }

    @Test func validatorCases() {
        func fields(_ pairs: [(String, String)]) -> [(name: String, value: String)] {
            pairs.map { (name: $0.0, value: $0.1) }
        }
        let good = HTTP2Validation.validateRequest(
            fields([
                (":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/"),
                ("accept", "*/*"), ("te", "Trailers")
            ]))
        #expect((try? good.get())?.head.headers.map(\.name) == ["Host", "accept"])
        let connect = HTTP2Validation.validateRequest(fields([(":method", "CONNECT"), (":authority", "a:443")]))
        #expect((try? connect.get())?.head.target == "a:443")
        let badConnect = HTTP2Validation.validateRequest(
            fields([(":method", "CONNECT"), (":authority", "a:443"), (":path", "/")]))
        #expect((try? badConnect.get()) == nil)
        let protoWithoutConnect = HTTP2Validation.validateRequest(
            fields([
                (":method", "GET"), (":scheme", "https"), (":authority", "a"),
                (":path", "/"), (":protocol", "websocket")
            ]))
        #expect((try? protoWithoutConnect.get()) == nil)
        #expect(HTTP2Validation.isValidValue(Array("a\tb".utf8)))
        #expect(!HTTP2Validation.isValidValue(Array("a\u{7f}".utf8)))
        #expect(!HTTP2Validation.isValidValue(Array("ab ".utf8)))
        #expect(HTTP2Validation.isValidValue([0x80, 0xff]))
        #expect(!HTTP2Validation.isValidName(Array("".utf8)))
    }

    /// The bit-per-byte classes agree with their definitions for every byte value, and the checks built on them
    /// give the same answers over contiguous bytes (a native string) and over a collection that is not.
    @Test func byteClassesMatchTheirDefinitions() {
        let letters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let token = letters.union("!#$%&'*+-.^_`|~".utf8)
        let authority = letters.union("-._~!$&'()*+,;=:[]%".utf8)
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(HTTP1Grammar.isTokenChar(byte) == token.contains(byte), "byte \(value)")
            #expect(
                HTTP2Validation.isLowercaseTokenByte(byte) == (token.contains(byte) && !(0x41...0x5a).contains(byte)),
                "byte \(value)")
            #expect(HTTP2Validation.isAuthorityByte(byte) == authority.contains(byte), "byte \(value)")
            let allowedInValue = byte == 0x09 || (byte >= 0x20 && byte != 0x7f)
            let inside: [UInt8] = [0x61, byte, 0x62]
            #expect(HTTP2Validation.isValidValue(inside) == allowedInValue, "byte \(value)")
            #expect(HTTP2Validation.isValidValue(inside.lazy.map { $0 }) == allowedInValue, "byte \(value)")
        }
        // Long values cross the word-at-a-time test: a bad byte anywhere, and spaces only at the ends, are refused.
        let long = String(repeating: "abcdefgh", count: 5)
        #expect(HTTP2Validation.isValidValue(long.utf8))
        #expect(!HTTP2Validation.isValidValue((long + "\r" + long).utf8))
        #expect(!HTTP2Validation.isValidValue((" " + long).utf8))
        #expect(!HTTP2Validation.isValidValue((long + "\t").utf8))
        #expect(HTTP2Validation.isValidValue((long + " " + long).utf8))
        #expect(HTTP2Validation.isValidValue("".utf8))
        #expect(HTTP2Validation.isValidAuthority("[::1]:8443".utf8))
        #expect(!HTTP2Validation.isValidAuthority("user@host".utf8))
        #expect(!HTTP2Validation.isValidName("content-Type".utf8))
        #expect(HTTP2Validation.isValidName("x-request-id".utf8.lazy.map { $0 }))
    }

    @Test func http1RequestConvertsBack() {
        let h1 = HTTPRequestHead(method: .get, target: "/p", headers: ["Host": "x.test", "Accept": "a"])
        let h2 = HTTP2RequestHead(h1, scheme: "http")
        #expect(h2.authority == "x.test")
        #expect(h2.path == "/p")
        #expect(h2.scheme == "http")
        #expect(!h2.headers.contains(name: "host"))
    }

    /// Field names are lower-cased byte by byte for ASCII letters only; a name already in lower case comes back as is.
    @Test func namesAreLowerCasedAsASCII() {
        #expect(HTTP2Validation.lowercasedName("Content-Type") == "content-type")
        #expect(HTTP2Validation.lowercasedName("x-request-id") == "x-request-id")
        #expect(
            HTTP2Validation.lowercasedName("X-A-LONG-HEADER-NAME-PAST-FIFTEEN") == "x-a-long-header-name-past-fifteen")
        #expect(HTTP2Validation.lowercasedName("@[`{AZaz09") == "@[`{azaz09", "only A-Z change")
        #expect(HTTP2Validation.lowercasedName("É-X") == "É-x", "non-ASCII bytes stay for validation to refuse")
        #expect(!HTTP2Validation.isValidName(HTTP2Validation.lowercasedName("É-X").utf8))
        #expect(HTTP2Validation.lowercasedName("") == "")
    }

    @Test func connectionSpecificFieldsAreKnownByName() {
        // In any case: outbound names are checked before they are lower-cased.
        for name in [
            "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "keep-alivE",
            "Connection", "Transfer-Encoding", "UPGRADE"
        ] {
            #expect(HTTP2Validation.isConnectionSpecific(name), "\(name)")
        }
        for name in ["te", "host", "connections", "upgrades", "x-connection", "", "content-type", "Keep-Alive-X"] {
            #expect(!HTTP2Validation.isConnectionSpecific(name), "\(name)")
        }
    }
}
