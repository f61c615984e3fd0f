import Testing

@testable import HTTPWire

@Suite struct HTTPFieldsTests {
    @Test func lookupIgnoresCaseAndKeepsOrder() {
        var headers: HTTPFields = ["Content-Type": "text/plain", "X-A": "1"]
        headers.add(name: "x-a", value: "2")
        #expect(headers.first(name: "content-type") == "text/plain")
        #expect(headers["X-A"] == ["1", "2"])
        #expect(headers.count == 3)
    }

    @Test func aFieldTakenFromAnotherListIsAppendedAsItIs() {
        let source: HTTPFields = ["Server": "nginx", "Date": "Fri, 27 Nov 2026 13:07:45 GMT"]
        var copy = HTTPFields()
        for field in source where field.name != "Server" { copy.add(field) }
        copy.add(HTTPFields.Field(name: "Via", value: "1.1 moya-gateway"))
        #expect(
            Array(copy) == [
                HTTPFields.Field(name: "Date", value: "Fri, 27 Nov 2026 13:07:45 GMT"),
                HTTPFields.Field(name: "Via", value: "1.1 moya-gateway")
            ])
    }

    @Test func replaceOrAddCollapsesRepeats() {
        var headers: HTTPFields = ["X-A": "1", "B": "b", "x-a": "2"]
        headers.replaceOrAdd(name: "X-a", value: "3")
        #expect(headers["x-a"] == ["3"])
        #expect(headers.count == 2)
        headers.replaceOrAdd(name: "New", value: "n")
        #expect(headers.first(name: "new") == "n")
    }

    @Test func tokensSplitListValues() {
        let headers: HTTPFields = ["Connection": "keep-alive, Upgrade", "connection": " X-Foo ,,"]
        #expect(headers.tokens(name: "Connection").map(String.init) == ["keep-alive", "Upgrade", "X-Foo"])
        #expect(headers.containsToken("upgrade", name: "connection"))
        #expect(!headers.containsToken("close", name: "connection"))
        #expect(headers.containsToken("x-foo", name: "Connection"))
        #expect(headers.containsToken("KEEP-ALIVE", name: "Connection"))
        #expect(!headers.containsToken("keep", name: "Connection"))
        #expect(!headers.containsToken("", name: "Connection"), "empty elements are not tokens")
        let tabs: HTTPFields = ["Connection": "\tclose\t", "Other": "upgrade"]
        #expect(tabs.containsToken("close", name: "connection"))
        #expect(!tabs.containsToken("upgrade", name: "connection"))
        #expect(!HTTPFields().containsToken("close", name: "Connection"))
    }

    /// The known-name form answers as the name form does, over repeated fields, and never for `other`.
    @Test func containsTokenInAKnownNameAnswersAsByName() {
        let headers: HTTPFields = [
            "Connection": "keep-alive", "X-Other": "close", "connection": " Upgrade ,close", "Expect": "100-Continue"
        ]
        for token in ["close", "upgrade", "keep-alive", "x-other", "100-continue", ""] {
            #expect(
                headers.containsToken(token, in: .connection) == headers.containsToken(token, name: "Connection"),
                "\(token)")
            #expect(
                headers.containsToken(token, in: .expect) == headers.containsToken(token, name: "Expect"), "\(token)")
        }
        #expect(headers.containsToken("close", in: .connection))
        #expect(headers.containsToken("100-continue", in: .expect))
        #expect(!headers.containsToken("close", in: .other))
        #expect(!HTTPFields().containsToken("close", in: .connection))
    }

    @Test func keepAliveFollowsVersionAndConnection() {
        #expect(HTTPRequestHead(method: .get, target: "/").wantsKeepAlive)
        #expect(!HTTPRequestHead(method: .get, target: "/", headers: ["Connection": "close"]).wantsKeepAlive)
        #expect(!HTTPRequestHead(method: .get, target: "/", version: .http1_0).wantsKeepAlive)
        #expect(
            HTTPRequestHead(method: .get, target: "/", version: .http1_0, headers: ["Connection": "Keep-Alive"])
                .wantsKeepAlive)
    }

    @Test func replacingWithOtherHeadersReplacesEveryFieldTheyNameAndKeepsTheirRepeats() {
        var headers = HTTPFields([("Accept", "x"), ("X-A", "1"), ("accept", "y"), ("Via", "old")])
        headers.replaceOrAdd(HTTPFields([("ACCEPT", "a"), ("Accept", "b"), ("Via", "new")]))
        #expect(headers.map { "\($0.name): \($0.value)" } == ["X-A: 1", "ACCEPT: a", "Accept: b", "Via: new"])
        var empty = HTTPFields()
        empty.replaceOrAdd(["X-B": "2"])
        #expect(empty == ["X-B": "2"])
        empty.append(contentsOf: ["X-B": "3"])
        #expect(empty["x-b"] == ["2", "3"])
    }

    @Test func caseInsensitiveComparisonIsASCIIOnly() {
        #expect("Content-Length".equalsIgnoringASCIICase("content-length"))
        #expect(!"a-b".equalsIgnoringASCIICase("a\rb"))
        #expect(!"[".equalsIgnoringASCIICase("{"))
    }
}
