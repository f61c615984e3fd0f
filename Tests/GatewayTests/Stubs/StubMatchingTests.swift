import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// Stub matching and templates in process (issue 39): path patterns in the route syntax, query and header
/// conditions, JSON body fields, template rendering with its escaping, sequences and seeded draws.
@Suite struct StubMatchingTests {
    static func request(
        _ method: HTTPMethod = .get, _ target: String, headers: HTTPFields = [:], body: String = "",
        id: String = "req-1"
    ) -> StubRequest {
        StubRequest(method: method, target: target, headers: headers, body: Array(body.utf8), requestID: id)
    }

    @Test func pathPatternsFollowTheRouteSyntax() {
        let template = PathPattern.template("/users/{id}/posts/{post}")
        #expect(template.parameterNames == ["id", "post"])
        #expect(template.matches("/users/7/posts/9"))
        #expect(template.parameters(in: "/users/7/posts/9") == ["7", "9"])
        #expect(!template.matches("/users/7/posts"))
        #expect(!template.matches("/users/7/posts/9/"), "a trailing slash is one more (empty) segment")
        #expect(!template.matches("/users//posts/9"))
        #expect(!template.matches("/users/7/comments/9"))
        #expect(template.parameters(in: "/users/7") == nil)
        #expect(PathPattern.template("/{a}").matches("/x") && !PathPattern.template("/{a}").matches("/"))
        let prefix = PathPattern.prefix("/api")
        #expect(prefix.matches("/api") && prefix.matches("/api/x") && !prefix.matches("/apix"))
        #expect(PathPattern.prefix("/").matches("/anything"))
        #expect(PathPattern.exact("/a/b").matches("/a/b") && !PathPattern.exact("/a/b").matches("/a/b/"))
        #expect(PathPattern.any.matches("/"))
        // The routes' own template parsing is the same function.
        let (segments, names) = PathPattern.templateSegments(of: "/users/{id}/posts")
        #expect(segments == ["users", nil, "posts"] && names == ["id"])
    }

    @Test func queryParametersCompareDecoded() {
        #expect(StubQuery.contains(name: Array("q".utf8), value: Array("a b/c".utf8), in: "x=1&q=a+b%2Fc"))
        #expect(!StubQuery.contains(name: Array("q".utf8), value: Array("a".utf8), in: "q=ab"))
        #expect(StubQuery.contains(name: Array("flag".utf8), value: [], in: "flag&x=1"))
        #expect(StubQuery.contains(name: Array("a".utf8), value: Array("2".utf8), in: "a=1&a=2"))
        #expect(StubQuery.value(of: "page", in: "page=3&page=4") == Array("3".utf8))
        #expect(StubQuery.value(of: "missing", in: "page=3") == nil)
        #expect(StubQuery.value(of: "bad", in: "bad=%zz%4") == Array("%zz%4".utf8), "invalid escapes stay as they are")
        #expect(StubQuery.value(of: "e", in: "&&e=&") == [])
    }

    @Test func jsonBodiesAreReadWithBoundedDepth() {
        let document = StubJSON.parse(
            Array(
                #"{"user": {"role": "admin", "tags": ["a", "b"]}, "n": 7.0, "ok": false, "z": null, "s": "\u00e9\"\ud83d\ude00"}"#
                    .utf8))
        #expect(StubJSON.value(at: ["user", "role"], in: document ?? .null) == .string("admin"))
        #expect(StubJSON.value(at: ["user", "tags", "1"], in: document ?? .null) == .string("b"))
        #expect(StubJSON.value(at: ["n"], in: document ?? .null) == .number(7))
        #expect(StubJSON.value(at: ["ok"], in: document ?? .null) == .bool(false))
        #expect(StubJSON.value(at: ["z"], in: document ?? .null) == .null)
        #expect(StubJSON.value(at: ["s"], in: document ?? .null) == .string("é\"😀"))
        #expect(StubJSON.parse(Array("{\"a\": 1,}".utf8)) == nil)
        #expect(StubJSON.parse(Array("[1, 2".utf8)) == nil)
        #expect(StubJSON.parse(Array("{} x".utf8)) == nil)
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(
            StubJSON.parse(Array(deep.utf8)) == nil,
            "past the depth limit it does not match (and does not overflow the stack)")
        #expect(
            StubJSON.matches(
                [StubJSONField(path: ["user", "role"], value: .string("admin"))],
                body: Array(#"{"user":{"role":"admin"}}"#.utf8)))
        #expect(
            !StubJSON.matches([StubJSONField(path: ["n"], value: .string("7"))], body: Array(#"{"n": 7}"#.utf8)),
            "the string \"7\" is not the number 7")
        #expect(!StubJSON.matches([StubJSONField(path: ["n"], value: .number(7))], body: Array("not json".utf8)))
    }

    @Test func templatesRenderRequestValuesWithJSONEscaping() throws {
        let body =
            #"{"id": "{{path.id}}", "q": "{{query.q}}", "t": "{{header.X-Tenant}}", "r": "{{request_id}}", "m": "{{method}} {{path}}", "n": {{random_int 5 5}}}"#
        let template = try #require(try StubTemplate.compile(Array(body.utf8), parameterNames: ["id"], escaping: .json))
        // A raw quote cannot reach a stub in a path (the router refuses it), but the escaping does not rely on that.
        let request = Self.request(
            .get, "/users/a\"b?q=%22%5C%0A%E2%80%A8&x=1",
            headers: ["X-Tenant": "acme\"}, \"admin\": true"], id: "id-1")
        let rendered = String(
            decoding: template.render(request, parameters: [7..<10], random: StubRandom(seed: 1)),  // `a"b`
            as: UTF8.self)
        #expect(
            rendered
                == #"{"id": "a\"b", "q": "\"\\\n\u2028", "t": "acme\"}, \"admin\": true", "r": "id-1", "m": "GET /users/a\"b", "n": 5}"#
        )
        let parsed = try JSONSerialization.jsonObject(with: Data(rendered.utf8)) as? [String: Any]
        #expect(parsed?["t"] as? String == "acme\"}, \"admin\": true", "a value never ends its string or adds a field")
        #expect(parsed?.count == 6)

        let header = try #require(
            try StubTemplate.compile(Array("v={{query.x}}".utf8), parameterNames: [], escaping: .header))
        let split = String(
            decoding: header.render(Self.request(.get, "/?x=a%0D%0ASet-Cookie:%20x"), random: StubRandom(seed: 1)),
            as: UTF8.self)
        #expect(split == "v=aSet-Cookie: x", "a header value cannot be split")
        #expect(try StubTemplate.compile(Array("no braces".utf8), parameterNames: [], escaping: .none) == nil)
    }

    @Test func nowIsRFC3339AndUUIDsAreVersion4() throws {
        let now = String(decoding: StubTemplate.rfc3339Now(), as: UTF8.self)
        #expect(now.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/) != nil, "\(now)")
        let random = StubRandom(seed: 7)
        let uuid = String(decoding: random.uuid(), as: UTF8.self)
        #expect(
            uuid.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil, "\(uuid)"
        )
        let values = (0..<1000).map { _ in random.integer(in: 1...6) }
        #expect(Set(values) == Set(1...6))
        #expect(
            StubRandom(seed: 3).integer(in: Int64.min...Int64.max)
                == StubRandom(seed: 3).integer(in: Int64.min...Int64.max))
    }

    static let stubConfig = """
        upstreams:
          s:
            stub:
              seed: 99
              headers: { Content-Type: application/json }
              responses:
                - match: { methods: [GET], path_params: "/users/{id}", headers: { X-Tenant: acme } }
                  body: '{"tenant": "acme", "id": "{{path.id}}"}'
                - match: { methods: [GET], path_params: "/users/{id}" }
                  body: '{"id": "{{path.id}}", "n": {{random_int 1 1000000}}}'
                - match: { methods: [POST], path: /users, json: { role: admin } }
                  sequence: [{ status: 201 }, { status: 200 }]
                - match: { path_prefix: /q, query: { page: "2" } }
                  body: page two
        routes:
          - { name: r, match: { path_prefix: / }, upstream: s }
        """

    @Test func responsesAreTriedInOrderWithSequencesAndA404() throws {
        let stub = try #require(try config(Self.stubConfig).upstream(named: "s")?.stub)
        let responder = StubResponder(stub: stub)
        func answer(_ request: StubRequest) -> StubAnswer {
            responder.answer(for: request, deadline: nil)
        }
        let tenant = answer(Self.request(.get, "/users/7", headers: ["X-Tenant": "acme"]))
        #expect(String(decoding: tenant.body, as: UTF8.self) == #"{"tenant": "acme", "id": "7"}"#)
        #expect(tenant.headers.first(name: "Content-Type") == "application/json")
        #expect(tenant.headers.first(name: "Via") == "1.1 moya-gateway")
        let other = answer(Self.request(.head, "/users/8"))
        #expect(String(decoding: other.body, as: UTF8.self).hasPrefix(#"{"id": "8", "n": "#), "HEAD matches GET")
        #expect(answer(Self.request(.post, "/users", body: #"{"role": "admin"}"#)).status == 201)
        #expect(answer(Self.request(.post, "/users", body: #"{"role": "admin"}"#)).status == 200)
        #expect(
            answer(Self.request(.post, "/users", body: #"{"role": "admin"}"#)).status == 200, "the last step repeats")
        let unmatched = answer(Self.request(.post, "/users", body: #"{"role": "user"}"#))
        #expect(unmatched.unmatched && unmatched.status == 404)
        #expect(String(decoding: unmatched.body, as: UTF8.self) == #"{"error":"not_found","request_id":"req-1"}"#)
        #expect(answer(Self.request(.get, "/q/x?page=2")).body == Array("page two".utf8))
        #expect(answer(Self.request(.get, "/q/x?page=3")).unmatched)

        // Seeded: the same answers in the same order from a new responder (a reload, another run).
        let again = StubResponder(stub: stub)
        let first = Self.request(.get, "/users/1")
        let second = Self.request(.get, "/users/1")
        let fresh = StubResponder(stub: stub)
        #expect(again.answer(for: first, deadline: nil).body == fresh.answer(for: second, deadline: nil).body)
    }

    @Test func aSequenceIsSharedByEveryThread() async throws {
        let stub = try #require(
            try config(
                """
                upstreams:
                  s:
                    stub:
                      responses:
                        - sequence: [{ status: 201 }, { status: 202 }, { status: 200 }]
                routes:
                  - { name: r, match: { path_prefix: / }, upstream: s }
                """
            ).upstream(named: "s")?.stub)
        let responder = StubResponder(stub: stub)
        let statuses = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<250).map { _ in
                        let request = StubMatchingTests.request(.get, "/x")
                        return responder.answer(for: request, deadline: nil).status
                    }
                }
            }
            return await group.reduce(into: [Int]()) { $0 += $1 }
        }
        #expect(statuses.filter { $0 == 201 }.count == 1)
        #expect(statuses.filter { $0 == 202 }.count == 1)
        #expect(statuses.filter { $0 == 200 }.count == 1998)
    }

    @Test func faultsAndErrorsAreDrawnAtTheirRates() throws {
        let stub = try #require(
            try config(
                """
                upstreams:
                  s:
                    stub:
                      seed: 5
                      body: ok
                      error_rate: 0.2
                      error_status: 503
                      faults: [{ type: connection_reset, rate: 0.3 }, { type: empty_response, rate: 0.1, mode: upstream }]
                routes:
                  - { name: r, match: { path_prefix: / }, upstream: s }
                """
            ).upstream(named: "s")?.stub)
        let responder = StubResponder(stub: stub)
        var resets = 0
        var upstreamFailures = 0
        var errors = 0
        var fine = 0
        for _ in 0..<10_000 {
            let request = Self.request(.get, "/")
            let answer = responder.answer(for: request, deadline: nil)
            if answer.clientFault?.kind == .connectionReset {
                resets += 1
            } else if case .networkError = answer.sample {
                upstreamFailures += 1
            } else if answer.status == 503 {
                errors += 1
            } else {
                fine += 1
            }
        }
        #expect((2700...3300).contains(resets), "\(resets)")
        #expect((800...1200).contains(upstreamFailures), "\(upstreamFailures)")
        #expect((1800...2200).contains(errors), "\(errors)")
        #expect((3700...4300).contains(fine), "\(fine)")
    }

    @Test func theRouteDeadlineCutsAStubsWait() throws {
        let stub = try #require(
            try config(
                """
                upstreams:
                  s: { stub: { delay: 2s, body: late } }
                routes:
                  - { name: r, match: { path_prefix: / }, upstream: s }
                """
            ).upstream(named: "s")?.stub)
        #expect(
            StubResponder.isNeeded(for: stub), "a delayed stub is answered by a responder, which knows the deadline")
        let responder = StubResponder(stub: stub)
        let request = Self.request(.get, "/")
        let answer = responder.answer(for: request, deadline: ContinuousClock.now + .milliseconds(100))
        #expect(answer.delay <= 0.1)
        guard case .networkError(let error) = answer.sample else {
            Issue.record("expected a timeout")
            return
        }
        #expect(GatewayErrorMapping.code(forUnderlying: error) == .gatewayTimeout)
    }
}

/// The prefilter only passes over what the matcher would refuse.
@Suite struct StubPrefilterTests {
    @Test func thePrefilterNeverRefusesWhatTheMatcherWouldAccept() {
        let matches: [StubMatchConfig] = {
            var list: [StubMatchConfig] = []
            func add(_ methods: [HTTPMethod]?, path: String? = nil, prefix: String? = nil, template: String? = nil) {
                var match = StubMatchConfig()
                match.methods = methods
                match.path = path
                match.pathPrefix = prefix
                match.pathParams = template
                list.append(match)
            }
            add(nil)
            add([.get], path: "/users")
            add([.get], path: "/users/")
            add([.post, "QUERY"], prefix: "/users")
            add(nil, prefix: "/")
            add([.delete], template: "/users/{id}")
            add([.get], template: "/{kind}/{id}")
            add(nil, template: "/users/{id}/posts/{post}")
            add(["QUERY"], path: "/")
            var withHeader = StubMatchConfig()
            withHeader.headers = [StubNameValue(name: "X-Tenant", value: "acme")]
            list.append(withHeader)
            var withQuery = StubMatchConfig()
            withQuery.pathParams = "/users/{id}"
            withQuery.query = [StubNameValue(name: "page", value: "2")]
            list.append(withQuery)
            return list
        }()
        let methods: [HTTPMethod] = [.get, .head, .post, .put, .delete, .patch, .options, "QUERY", "PURGE"]
        let paths = [
            "/", "/users", "/users/", "/users/7", "/users/7/", "/users/7/posts/9", "/posts/7", "/usersx/7", "/u",
            "/users/7?page=2", "/users/7?"
        ]
        for match in matches {
            let matcher = StubMatcher(match)
            let prefilter = StubPrefilter(matcher)
            for method in methods {
                for path in paths {
                    for headers: HTTPFields in [[:], ["x-tenant": "acme", "Accept": "*/*"]] {
                        let request = StubMatchingTests.request(method, path, headers: headers)
                        let accepted = matcher.matches(request)
                        let admitted = prefilter.admits(StubPrefilter.Key(request))
                        #expect(!accepted || admitted, "\(method) \(path) \(headers) vs \(match)")
                    }
                }
            }
        }
        #expect(
            !StubPrefilter(
                StubMatcher(
                    {
                        var m = StubMatchConfig()
                        m.path = "/users"
                        return m
                    }())
            )
            .admits(StubPrefilter.Key(StubMatchingTests.request(.get, "/orders"))),
            "another first segment is passed over")
    }
}
