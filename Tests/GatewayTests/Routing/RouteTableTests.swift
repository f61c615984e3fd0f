import HTTPWire
import Testing

@testable import Gateway

@Suite struct RouteTableTests {
    static let text = """
        upstreams:
          api: { base_url: "http://127.0.0.1:18080/v1" }
          root: { base_url: "http://127.0.0.1:18081" }
          admin: { base_url: "http://127.0.0.1:18082/internal/" }
        routes:
          - name: api
            match: { path_prefix: /api, methods: [GET, POST] }
            upstream: api
            rewrite: { strip_prefix: /api }
          - name: users
            match: { path_prefix: /api/users, methods: [GET] }
            upstream: api
          - name: user
            match: { path_params: "/api/users/{id}", methods: [DELETE] }
            upstream: api
          - name: user-orders
            match: { path_params: "/api/users/{id}/orders/{order}" }
            upstream: root
          - name: health
            match: { path: /api/health, methods: [GET] }
            upstream: root
          - name: host-only
            match: { path_prefix: /api, host: Admin.Example.com }
            upstream: admin
            rewrite: { strip_prefix: /api, add_prefix: /v2 }
          - name: put-only
            match: { path: /things, methods: [PUT, PATCH] }
            upstream: root
          - name: post-things
            match: { path: /things, methods: [POST] }
            upstream: root
          - name: custom
            match: { path: /custom, methods: [PURGE] }
            upstream: root
        """

    static let table: RouteTable = {
        switch ConfigLoader().load(path: "t.yaml", text: text, environment: [:]) {
        case .success(let config): return RouteTable(config: config)
        case .failure(let errors): fatalError("test config: \(errors)")
        }
    }()

    /// A table of `paths` (exact, GET only) and a POST route on `/a`, from configuration text.
    static func exactTable(_ paths: [String]) throws -> RouteTable {
        var text = "upstreams:\n  root: { base_url: \"http://127.0.0.1:18081\" }\nroutes:\n"
        for (index, path) in paths.enumerated() {
            text += "  - { name: r\(index), match: { path: \(path), methods: [GET] }, upstream: root }\n"
        }
        text += "  - { name: post-a, match: { path: /a, methods: [POST] }, upstream: root }\n"
        let config = try #require(try? ConfigLoader().load(path: "t.yaml", text: text, environment: [:]).get())
        return RouteTable(config: config)
    }

    /// Exact paths are found by comparison in a table of at most four of them and by hashing in a larger one: the
    /// same answers either way (the route, the method's refusal, an unknown path, a query kept).
    @Test func exactPathsRouteAlikeInShortAndLongTables() throws {
        let long = "/a-path-longer-than-fifteen-bytes"
        for paths in [["/a", "/b"], ["/a", "/b", "/c", "/d", "/e", long]] {
            let table = try Self.exactTable(paths)
            func name(_ method: HTTPMethod, _ target: String) -> String {
                switch table.route(method: method, host: nil, target: target) {
                case .matched(let route, let path, _): return "\(route.name) \(path)"
                case .methodNotAllowed(let allow): return "405 \(allow.sorted())"
                case .notFound: return "404"
                case .badRequest: return "400"
                }
            }
            #expect(name(.get, "/a") == "r0 /a", "\(paths.count) paths")
            #expect(name(.post, "/a") == "post-a /a", "\(paths.count) paths")
            #expect(name(.get, "/b?x=1") == "r1 /b?x=1", "\(paths.count) paths")
            #expect(name(.delete, "/b") == "405 [\"GET\", \"HEAD\"]", "\(paths.count) paths")
            #expect(name(.get, "/z") == "404", "\(paths.count) paths")
            #expect(name(.get, "/A") == "404", "paths are case-sensitive (\(paths.count) paths)")
            if paths.count > 2 { #expect(name(.get, long) == "r5 \(long)") }
        }
    }

    func route(_ method: HTTPMethod, _ target: String, host: String? = "gw.local:8080") -> RouteResult {
        Self.table.route(method: method, host: host, target: target)
    }

    func matched(_ method: HTTPMethod, _ target: String, host: String? = "gw.local")
        -> (name: String, path: String, params: [String: String])?
    {
        guard case .matched(let route, let path, let params) = route(method, target, host: host) else { return nil }
        return (route.name, path, params)
    }

    @Test func precedenceExactThenTemplateThenLongestPrefix() {
        #expect(
            Self.table.routes.map(\.name) == [
                "health", "put-only", "post-things", "custom", "user-orders", "user",
                "users", "host-only", "api"
            ])
        #expect(matched(.get, "/api/health")?.name == "health")
        #expect(matched(.get, "/api/users/7")?.name == "users")
        #expect(matched(.delete, "/api/users/7")?.name == "user")
        #expect(matched(.delete, "/api/users/7")?.params == ["id": "7"])
        #expect(matched(.get, "/api/users/7/orders/9")?.params == ["id": "7", "order": "9"])
        #expect(matched(.get, "/api/other")?.name == "api")
    }

    @Test func prefixesMatchOnSegmentBoundaries() {
        #expect(matched(.get, "/api/users")?.name == "users")
        #expect(matched(.get, "/api/users/")?.name == "users")
        #expect(matched(.get, "/api/usersx")?.name == "api")
        #expect(matched(.get, "/apix") == nil)
        #expect(route(.get, "/apix") == .notFound)
        #expect(route(.get, "/") == .notFound)
    }

    @Test func templateParamsNeedOneNonEmptySegment() {
        #expect(matched(.delete, "/api/users/")?.name == nil)
        #expect(matched(.delete, "/api/users/7/x")?.name == nil)
    }

    @Test func methodNotAllowedListsTheUnionAndHeadViaGet() {
        #expect(route(.delete, "/api/x") == .methodNotAllowed(allow: ["GET", "HEAD", "POST"]))
        // A path matched by several routes: Allow is the union, and a less specific route may still take the method.
        #expect(route(.delete, "/api/health") == .methodNotAllowed(allow: ["GET", "HEAD", "POST"]))
        #expect(matched(.post, "/api/health")?.name == "api")
        #expect(route(.get, "/things") == .methodNotAllowed(allow: ["PUT", "PATCH", "POST"]))
        #expect(matched(.head, "/api/health")?.name == "health")
        #expect(matched(.head, "/api/users/1")?.name == "users")
        #expect(matched(.put, "/things")?.name == "put-only")
        #expect(matched(.post, "/things")?.name == "post-things")
        #expect(matched("PURGE", "/custom")?.name == "custom")
    }

    @Test func methodsAreCaseSensitive() {
        #expect(route("get", "/api/health") == .methodNotAllowed(allow: ["GET", "HEAD", "POST"]))
        #expect(route("get", "/things") == .methodNotAllowed(allow: ["PUT", "PATCH", "POST"]))
        #expect(route("purge", "/custom") == .methodNotAllowed(allow: ["PURGE"]))
    }

    @Test func hostMatchIgnoresCaseAndPort() {
        #expect(matched(.delete, "/api/x", host: "admin.example.COM:8443")?.name == "host-only")
        #expect(matched(.delete, "/api/x", host: "ADMIN.example.com")?.path == "/internal/v2/x")
        #expect(
            route(.delete, "/api/x", host: "other.example.com") == .methodNotAllowed(allow: ["GET", "HEAD", "POST"]))
        #expect(route(.delete, "/api/x", host: nil) == .methodNotAllowed(allow: ["GET", "HEAD", "POST"]))
        #expect(RouteTable.hostWithoutPort("[::1]:8080") == "::1")
        #expect(matched(.delete, "/api/x", host: "admin.example.com.")?.name == "host-only")
    }

    @Test func rewriteAndBasePath() {
        #expect(matched(.get, "/api/x/y?b=2&a=1")?.path == "/v1/x/y?b=2&a=1")
        #expect(matched(.get, "/api")?.path == "/v1/")
        #expect(matched(.get, "/api/users/7")?.path == "/v1/api/users/7")
        #expect(matched(.get, "/api/health?x")?.path == "/api/health?x")
        #expect(matched(.get, "/api/%7Efoo/%41")?.path == "/v1/~foo/A")
        #expect(matched(.get, "/api/a%20b")?.path == "/v1/a%20b")
        #expect(matched(.get, "/api/a%c3%a9")?.path == "/v1/a%C3%A9")
    }

    @Test func headRequestCarriesHostHeader() {
        let head = HTTPRequestHead(method: .delete, target: "/api/q", headers: ["Host": "admin.example.com"])
        guard case .matched(let route, _, _) = Self.table.route(head) else {
            Issue.record("no match")
            return
        }
        #expect(route.name == "host-only")
    }

    /// SSRF-01, -02: absolute-form, authority-form, asterisk, CONNECT.
    @Test func openProxyInputsAreRefused() {
        for target in ["http://127.0.0.2:9/x", "https://evil.example/api", "127.0.0.2:9", "*", "", "api/x"] {
            guard case .badRequest = route(.get, target) else {
                Issue.record("accepted \(target)")
                continue
            }
        }
        guard case .badRequest = route(.connect, "/api/x") else {
            Issue.record("CONNECT accepted")
            return
        }
        guard case .badRequest = route(.options, "*") else {
            Issue.record("OPTIONS * accepted")
            return
        }
    }

    /// SSRF-03: dot segments are resolved, then the route is checked again.
    @Test func dotSegmentsAreResolvedBeforeMatching() {
        #expect(route(.get, "/api/../admin") == .notFound)
        #expect(route(.get, "/api/x/../../admin") == .notFound)
        #expect(matched(.get, "/api/x/../users/3")?.name == "users")
        #expect(matched(.get, "/other/../api/users/3")?.name == "users")
        #expect(matched(.get, "/api/./x/.")?.path == "/v1/x/")
        guard case .badRequest = route(.get, "/api/../../admin") else {
            Issue.record("escape accepted")
            return
        }
        guard case .badRequest = route(.get, "/..") else {
            Issue.record("escape accepted")
            return
        }
    }

    /// SSRF-04: encoded dots resolve like dots; an encoded slash is refused.
    @Test func encodedTraversal() {
        #expect(route(.get, "/api/%2e%2e/admin") == .notFound)
        #expect(route(.get, "/api/%2E%2e/admin") == .notFound)
        for target in [
            "/api/%2E%2e%2fadmin", "/api/..%2fadmin", "/api/..%2Fadmin", "/api/%2e%2e/%2e%2e/admin",
            "/api%2fadmin"
        ] {
            guard case .badRequest = route(.get, target) else {
                Issue.record("accepted \(target)")
                continue
            }
        }
    }

    /// SSRF-05: double encoding stays encoded and under the prefix; overlong UTF-8, NUL, backslash, `..;` refused.
    @Test func nastyEncodings() {
        #expect(matched(.get, "/api/..%252f..%252fadmin")?.path == "/v1/..%252f..%252fadmin")
        for target in [
            "/api/%c0%ae%c0%ae/admin", "/api/%00", "/api\\..\\admin", "/api/%5c..", "/api/..;/admin",
            "/api/.;x/y", "/api/%zz", "/api/%4", "/api/\u{e9}", "/api/a b", "/api/%ff", "/api/%ed%a0%80"
        ] {
            guard case .badRequest = route(.get, target) else {
                Issue.record("accepted \(target)")
                continue
            }
        }
    }

    /// SSRF-06: scheme-relative and `@` targets stay on the configured upstream, under its base path.
    @Test func schemeRelativeAndAtTargets() {
        #expect(route(.get, "//127.0.0.2:9/x") == .notFound)
        #expect(matched(.get, "//api//x")?.path == "/v1/x")
        #expect(matched(.get, "/api/@127.0.0.2/x")?.path == "/v1/@127.0.0.2/x")
        #expect(matched(.get, "/api//127.0.0.2:9/x")?.path == "/v1/127.0.0.2:9/x")
    }

    /// SSRF-08: `#` is refused; encoded CR LF in the query is forwarded encoded.
    @Test func queryAndFragment() {
        guard case .badRequest = route(.get, "/api/x#frag") else {
            Issue.record("fragment accepted")
            return
        }
        #expect(matched(.get, "/api/x?a=1%0d%0aX:%20y")?.path == "/v1/x?a=1%0d%0aX:%20y")
        guard case .badRequest = route(.get, "/api/x?a=%g1") else {
            Issue.record("bad query accepted")
            return
        }
    }
}
