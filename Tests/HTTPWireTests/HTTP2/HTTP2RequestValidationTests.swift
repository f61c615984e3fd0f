import Testing

@testable import HTTPWire

@Suite struct HTTP2RequestValidationTests {
    @Test func http1ConversionBuildsOneHostAndJoinsCookies() throws {
        let head = HTTP2RequestHead(
            method: .post, scheme: "https", authority: "api.example.com:8443", path: "/v1/items?x=1",
            headers: [
                "cookie": "a=1", "content-type": "application/json", "Cookie": "b=2",
                "te": "trailers", "host": "api.example.com:8443"
            ])
        let h1 = try head.toHTTP1Request()
        #expect(h1.method == .post)
        #expect(h1.target == "/v1/items?x=1")
        #expect(h1.version == .http1_1)
        #expect(h1.headers.map(\.name) == ["Host", "cookie", "content-type"])
        #expect(h1.headers["host"] == ["api.example.com:8443"])
        #expect(h1.headers["cookie"] == ["a=1; b=2"])
    }

    @Test func http1ConversionRejectsInjection() {
        let bad: [HTTP2RequestHead] = [
            HTTP2RequestHead(method: .get, authority: "a", path: "/a HTTP/1.1\r\nX: y"),
            HTTP2RequestHead(method: .get, authority: "a\r\nX: y", path: "/"),
            HTTP2RequestHead(method: "GET /", authority: "a", path: "/"),
            HTTP2RequestHead(method: .get, authority: "a", path: "/", headers: ["x": "1\r\nInjected: 2"]),
            HTTP2RequestHead(method: .get, authority: "a", path: "/", headers: ["x y": "1"]),
            HTTP2RequestHead(method: .get, authority: "a", path: "/", headers: ["x:y": "1"]),
            HTTP2RequestHead(method: .get, authority: "a", path: "/", headers: ["host": "b"]),
            HTTP2RequestHead(method: .get, authority: nil, path: "/"),
            HTTP2RequestHead(method: .get, authority: "a", path: "relative"),
            HTTP2RequestHead(method: .get, authority: "a", path: nil)
        ]
        for head in bad {
            #expect(throws: RequestError.self) { _ = try head.toHTTP1Request() }
        }
    }

    @Test func hostFieldWithoutAuthority() throws {
        let head = HTTP2RequestHead(method: .get, authority: nil, path: "/", headers: ["host": "h.example"])
        let h1 = try head.toHTTP1Request()
        #expect(h1.headers["host"] == ["h.example"])
        #expect(h1.headers.count == 1)
    }

    @Test func connectUsesAuthorityForm() throws {
        let head = HTTP2RequestHead(method: .connect, scheme: nil, authority: "db.internal:5432", path: nil)
        #expect(try head.toHTTP1Request().target == "db.internal:5432")
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
        #expect((try? good.get())?.headers.count == 2)
        let connect = HTTP2Validation.validateRequest(fields([(":method", "CONNECT"), (":authority", "a:443")]))
        #expect((try? connect.get())?.authority == "a:443")
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
