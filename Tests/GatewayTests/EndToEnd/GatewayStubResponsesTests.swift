import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Stub upstreams that answer per request (issue 39) through the real binary: matched and templated responses over
/// HTTP/1.1 and HTTP/2, JSON body matches, sequences, the 404 without a default, reloads (a sequence starts again; a
/// bad file keeps the last good stubs), and the route timeout cutting a stub's latency.
@Suite(.serialized) struct GatewayStubResponsesTests {
    static let config = """
        \(GatewayProcess.listeners)
        upstreams:
          users:
            stub:
              seed: 1
              headers: { Content-Type: application/json }
              responses:
                - match: { methods: [GET], path_params: "/users/{id}", headers: { X-Tenant: acme } }
                  headers: { X-Tenant-Echo: "{{header.X-Tenant}}" }
                  body: '{"id": "{{path.id}}", "tenant": "acme", "request": "{{request_id}}"}'
                - match: { methods: [GET], path_params: "/users/{id}" }
                  body: '{"id": "{{path.id}}", "page": "{{query.page}}", "n": {{random_int 1 6}}}'
                - match: { methods: [POST], path: /users, json: { role: admin } }
                  sequence:
                    - { status: 201, body: '{"created": true}' }
                    - { status: 409, body: '{"created": false}' }
                - match: { methods: [GET], path: /slow }
                  delay: 2s
                  body: late
        routes:
          - { name: users, match: { path_prefix: /api }, upstream: users, rewrite: { strip_prefix: /api }, timeout: 500ms }
        """

    static func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func matchedTemplatedResponsesSequencesAndThe404() async throws {
        let gateway = try await GatewayProcess(config: Self.config)
        let client = HTTPClient()
        let acme = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/users/42",
                headers: ["X-Tenant": "acme", "X-Request-Id": "rid-1"]))
        #expect(acme.status == 200)
        #expect(Self.text(acme) == #"{"id": "42", "tenant": "acme", "request": "rid-1"}"#)
        #expect(acme.headers.first(name: "X-Tenant-Echo") == "acme")
        #expect(acme.headers.first(name: "Content-Type") == "application/json")
        #expect(acme.headers.first(name: "X-Request-Id") == "rid-1")

        let other = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/users/%22quoted%22?page=3"))
        let document = try JSONSerialization.jsonObject(with: Data(other.body)) as? [String: Any]
        #expect(document?["id"] as? String == "%22quoted%22", "the path as the upstream gets it; still valid JSON")
        #expect(document?["page"] as? String == "3")
        #expect((1...6).contains(document?["n"] as? Int ?? 0))
        let quote = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/users/7?page=%22%7D"))
        #expect(
            (try JSONSerialization.jsonObject(with: Data(quote.body)) as? [String: Any])?["page"] as? String == "\"}",
            "a value with a quote stays inside its string")

        func post(_ role: String) async throws -> HTTPClientResponse {
            try await client.execute(
                HTTPClientRequest(
                    method: .post, url: "\(gateway.url)/api/users",
                    headers: ["Content-Type": "application/json"],
                    body: .bytes(Array(#"{"role": "\#(role)", "name": "x"}"#.utf8))))
        }
        #expect(try await post("admin").status == 201)
        #expect(try await post("admin").status == 409)
        #expect(try await post("admin").status == 409, "the last step repeats")
        let unmatched = try await post("user")
        #expect(unmatched.status == 404)
        #expect(Self.text(unmatched).hasPrefix(#"{"error":"not_found","request_id":""#))

        // HTTP/2 gets the same answers.
        let h2 = try ProcessRunner.run(
            "curl",
            [
                "-sS", "--http2-prior-knowledge", "-H", "X-Tenant: acme", "-H", "X-Request-Id: h2",
                "-w", " %{http_version} %{http_code}", "\(gateway.url)/api/users/5"
            ])
        #expect(h2.stdout == #"{"id": "5", "tenant": "acme", "request": "h2"} 2 200"#, "\(h2.stdout) \(h2.stderr)")

        // The route's timeout cuts the stub's 2 s delay: 504 at 500 ms, as for an upstream too slow to answer.
        let started = ContinuousClock.now
        let slow = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/slow"))
        #expect(slow.status == 504)
        #expect(ContinuousClock.now - started < .milliseconds(1500))
        gateway.stop()
        let lines = gateway.accessLog
        #expect(
            lines.contains {
                $0["status"] as? Int == 404 && $0["upstream_error"] as? String == "no stub response matched"
            })
        #expect(
            lines.contains {
                $0["status"] as? Int == 504 && $0["upstream_error"] as? String == "stub fault: route timeout"
            })
        #expect(lines.first { $0["request_id"] as? String == "rid-1" }?["upstream_path"] as? String == "/users/42")
    }

    @Test func aReloadStartsSequencesAgainAndABadFileKeepsTheLastGoodStubs() async throws {
        let config = """
            \(GatewayProcess.listeners)
            upstreams:
              s:
                stub:
                  responses:
                    - sequence: [{ status: 201, body: first }, { status: 200, body: "VERSION" }]
            routes:
              - { name: s, match: { path_prefix: / }, upstream: s }
            """
        let gateway = try await GatewayProcess(config: config.replacingOccurrences(of: "VERSION", with: "one"))
        let client = HTTPClient()
        func get() async throws -> String {
            let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/x"))
            return "\(response.status) \(Self.text(response))"
        }
        #expect(try await get() == "201 first")
        #expect(try await get() == "200 one")
        try gateway.rewriteConfig(config.replacingOccurrences(of: "VERSION", with: "two"))
        gateway.signal(SIGHUP)
        try await waitFor { gateway.stdout.contains("\"msg\":\"reloaded\"") }
        #expect(try await get() == "201 first", "a reload starts the sequence again")
        #expect(try await get() == "200 two")
        try gateway.rewriteConfig(config.replacingOccurrences(of: "VERSION", with: "{{bogus}}"))
        gateway.signal(SIGHUP)
        try await waitFor { gateway.stdout.contains("reload rejected") }
        #expect(gateway.stdout.contains("unknown template variable 'bogus'"))
        #expect(try await get() == "200 two", "the running stubs stay")
        gateway.stop()
    }

    /// Polls `condition` every 50 ms for up to 5 s.
    private func waitFor(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<100 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("condition not met within 5 s")
    }
}
