import Foundation
import TestSupport
import Testing

/// Route matching through the real `moya-gateway` binary, over raw HTTP/1.1 so that targets and `Host` go out exactly
/// as written: precedence (exact, then the longest prefix or template, a route whose methods do not allow the request
/// passing it on), path parameters, segment boundaries, hosts, dot segments that cannot climb out of a prefix, and the
/// 404/405/400 answers. Each route adds its own prefix upstream, so the recording upstream's target names the route
/// that matched.
@Suite(.serialized) struct GatewayRoutingTests {
    static func config(upstreamPort: Int) -> String {
        """
        \(GatewayProcess.listeners)
        upstreams:
          echo: { base_url: "http://127.0.0.1:\(upstreamPort)" }
        routes:
          - { name: api, match: { path_prefix: /api }, upstream: echo, rewrite: { add_prefix: /any } }
          - { name: users, match: { path_prefix: /api/users }, upstream: echo, rewrite: { add_prefix: /users } }
          - { name: by-id, match: { path_params: "/api/users/{id}", methods: [GET] }, upstream: echo,
              rewrite: { add_prefix: /byid } }
          - { name: me, match: { path: /api/users/me }, upstream: echo, rewrite: { add_prefix: /me } }
          - { name: hosted, match: { path_prefix: /h, host: api.example.com }, upstream: echo,
              rewrite: { strip_prefix: /h, add_prefix: /hosted } }
          - { name: read-only, match: { path_prefix: /ro, methods: [GET] }, upstream: echo }
        """
    }

    struct Answer {
        var status: Int
        var head: String
        var body: String
    }

    /// One request on a connection of its own.
    static func send(_ port: Int, _ method: String, _ target: String, host: String = "gateway.test") throws -> Answer {
        let client = try RawClient(port: port)
        client.send(
            "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\nX-Request-Id: route-test\r\nConnection: close\r\n\r\n")
        let text = String(decoding: client.readAll(timeout: 5).bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Answer(status: status, head: parts.first ?? "", body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func theMostSpecificRouteWinsAndTargetsCannotClimbOutOfAPrefix() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        // (method, target, host, what the upstream is sent; nil when the gateway answers itself)
        let routed: [(String, String, String, String)] = [
            ("GET", "/api/users/me", "gateway.test", "/me/api/users/me"),  // exact beats everything
            ("GET", "/api/users/7?x=1", "gateway.test", "/byid/api/users/7?x=1"),  // a template is a length
            ("POST", "/api/users/7", "gateway.test", "/users/api/users/7"),  // by-id is GET only: next one
            ("GET", "/api/users/7/orders", "gateway.test", "/users/api/users/7/orders"),  // {id} is one segment
            ("GET", "/api/users", "gateway.test", "/users/api/users"),  // the prefix itself
            ("GET", "/api/usersx", "gateway.test", "/any/api/usersx"),  // segment boundaries
            ("GET", "/api/users/../orders", "gateway.test", "/any/api/orders"),  // `..` leaves users
            ("GET", "/api/users/%2e%2e/orders", "gateway.test", "/any/api/orders"),  // so does `%2e%2e`
            ("GET", "/api//users/./7", "gateway.test", "/byid/api/users/7"),  // empty and `.` segments
            ("GET", "/h/x", "API.Example.COM:8080", "/hosted/x"),  // host: any case, no port
            ("HEAD", "/ro/r", "gateway.test", "/ro/r")  // GET allows HEAD
        ]
        for (method, target, host, expected) in routed {
            upstream.reset()
            let answer = try Self.send(gateway.port, method, target, host: host)
            #expect(answer.status == 200, "\(method) \(target): \(answer.head)")
            #expect(upstream.requests.map(\.head.target) == [expected], "\(method) \(target)")
        }

        upstream.reset()
        // (method, target, host, status, error code)
        let refused: [(String, String, String, Int, String)] = [
            ("GET", "/api/users/%2e%2e/%2e%2e/etc/passwd", "gateway.test", 404, "not_found"),  // out of /api: no route
            ("GET", "/api/users/..%2f..%2fetc", "gateway.test", 400, "bad_request"),  // encoded slash
            ("GET", "/api/../../etc/passwd", "gateway.test", 400, "bad_request"),  // above the root
            ("GET", "/h/x", "other.example.com", 404, "not_found"),  // wrong host
            ("GET", "/nowhere", "gateway.test", 404, "not_found"),
            ("DELETE", "/ro/r", "gateway.test", 405, "method_not_allowed")
        ]
        for (method, target, host, status, code) in refused {
            let answer = try Self.send(gateway.port, method, target, host: host)
            #expect(answer.status == status, "\(method) \(target): \(answer.head)")
            #expect(answer.body == #"{"error":"\#(code)","request_id":"route-test"}"#, "\(method) \(target)")
            #expect(answer.head.contains("Content-Type: application/json"), "\(answer.head)")
            if status == 405 { #expect(answer.head.contains("Allow: GET, HEAD"), "\(answer.head)") }
        }
        #expect(
            upstream.requests.isEmpty, "nothing refused reached the upstream: \(upstream.requests.map(\.head.target))")
        let lines = await gateway.accessLog(atLeast: routed.count + refused.count)
        #expect(lines.filter { $0["route"] as? String == "by-id" }.count == 2)
        gateway.stop()
    }
}
