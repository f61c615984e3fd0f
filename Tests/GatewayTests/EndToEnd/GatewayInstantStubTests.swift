import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// Stubs without latency are answered from the event loop (no task): the same answers, headers, API-key checks,
/// injected errors and access-log lines as any stub, over HTTP/1.1 (pipelined) and HTTP/2.
@Suite(.serialized) struct GatewayInstantStubTests {
    static let config = """
        \(GatewayProcess.listeners)
        clients:
          api_keys:
            header: X-Api-Key
            keys: { web: "${WEB_KEY}", ops: ops-key }
        upstreams:
          instant:
            stub: { status: 201, headers: { Content-Type: application/json, X-Stub: yes }, body: '{"ok":true}' }
          flaky:
            stub: { status: 200, body: fine, error_rate: 0.5, error_status: 503 }
          piped:
            # The same stub as `instant`, with a token of the gateway's own: answered through Moya's pipeline, not
            # from the canned answer (see CannedStubAnswer).
            access_token: { type: bearer, token: secret }
            stub: { status: 201, headers: { Content-Type: application/json, X-Stub: yes }, body: '{"ok":true}' }
        routes:
          - { name: instant, match: { path_prefix: /instant }, upstream: instant }
          - { name: keyed, match: { path_prefix: /keyed }, upstream: instant, clients: [web] }
          - { name: others, match: { path_prefix: /others }, upstream: instant, clients: [ops] }
          - { name: flaky, match: { path_prefix: /flaky }, upstream: flaky }
          - { name: piped, match: { path_prefix: /piped }, upstream: piped }
        """

    @Test func answersHeadersKeysAndTheAccessLogAreThoseOfAnyStub() async throws {
        let gateway = try await GatewayProcess(config: Self.config, environment: ["WEB_KEY": "wk"])
        let client = HTTPClient()
        let response = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/instant/a?b=1",
                headers: ["X-Request-Id": "instant-1", "X-Api-Key": "wk"]))
        #expect(response.status == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == "{\"ok\":true}")
        #expect(response.headers.first(name: "X-Stub") == "yes")
        #expect(response.headers.first(name: "X-Request-Id") == "instant-1")
        let noKey = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/instant"))
        #expect(noKey.status == 401)
        let unknownKey = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/instant", headers: ["X-Api-Key": "nope"]))
        #expect(unknownKey.status == 401)
        let keyed = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/keyed", headers: ["X-Api-Key": "wk"]))
        #expect(keyed.status == 201)
        let forbidden = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/others", headers: ["X-Api-Key": "wk"]))
        #expect(forbidden.status == 403)
        let posted = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(gateway.url)/instant",
                headers: ["X-Api-Key": "wk"], body: .bytes(Array("payload".utf8))))
        #expect(posted.status == 201, "a request with a body takes the task path to the same answer")

        var statuses: [Int] = []
        for _ in 0..<200 {
            statuses.append(
                try await client.execute(HTTPClientRequest(url: "\(gateway.url)/flaky", headers: ["X-Api-Key": "wk"]))
                    .status)
        }
        let errors = statuses.filter { $0 == 503 }.count
        #expect(Set(statuses) == [200, 503])
        #expect((50...150).contains(errors), "error_rate 0.5 over 200 requests: \(errors) errors")
        gateway.stop()

        let lines = gateway.accessLog
        let first = try #require(lines.first { $0["request_id"] as? String == "instant-1" })
        #expect(first["status"] as? Int == 201)
        #expect(first["route"] as? String == "instant")
        #expect(first["upstream_path"] as? String == "/instant/a?b=1")
        #expect(first["stubbed"] as? Bool == true)
        #expect(first["bytes_out"] as? Int == 11)
        #expect(lines.count == 206, "one access-log line per request")
    }

    @Test func aCannedAnswerIsTheOneMoyasPipelineGives() async throws {
        let gateway = try await GatewayProcess(config: Self.config, environment: ["WEB_KEY": "wk"])
        func answer(_ path: String, method: String = "GET") throws -> String {
            let raw = try RawClient(port: gateway.port)
            raw.send("\(method) \(path) HTTP/1.1\r\nHost: t\r\nX-Api-Key: wk\r\nX-Request-Id: same\r\n\r\n")
            let text = raw.read(until: { $0.hasSuffix("{\"ok\":true}") || $0.hasSuffix("\r\n\r\n") }, timeout: 5)
            // The date is the only part that may differ between the two answers.
            return text.components(separatedBy: "\r\n").filter { !$0.hasPrefix("Date: ") }.joined(separator: "\n")
        }
        let canned = try answer("/instant/x")
        #expect(canned.hasPrefix("HTTP/1.1 201"), "\(canned)")
        #expect(canned == (try answer("/piped/x")))
        #expect(try answer("/instant/x", method: "HEAD") == (try answer("/piped/x", method: "HEAD")))
        gateway.stop()
        let lines = gateway.accessLog.map { line in
            line.filter { !["route", "upstream", "upstream_path", "path", "duration_ms", "ts"].contains($0.key) }
                .mapValues { "\($0)" }
        }
        #expect(lines.count == 4)
        #expect(lines.count == 4 && lines[0] == lines[1] && lines[2] == lines[3], "\(lines)")
    }

    @Test func pipelinedAndHTTP2RequestsAreAnsweredInOrder() async throws {
        let gateway = try await GatewayProcess(config: Self.config, environment: ["WEB_KEY": "wk"])
        let raw = try RawClient(port: gateway.port)
        raw.send(
            (1...20).map { "GET /instant/\($0) HTTP/1.1\r\nHost: t\r\nX-Api-Key: wk\r\nX-Request-Id: p\($0)\r\n\r\n" }
                .joined())
        let text = raw.read(until: { $0.components(separatedBy: "HTTP/1.1 201").count == 21 }, timeout: 5)
        let ids = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("X-Request-Id: ") }.map {
            $0.dropFirst(14)
        }
        #expect(ids == (1...20).map { "p\($0)"[...] }, "in order: \(ids)")
        let h2 = try ProcessRunner.run(
            "curl",
            [
                "-sS", "--http2-prior-knowledge", "-H", "X-Api-Key: wk", "-H", "X-Request-Id: h2-id", "-D", "-",
                "-w", " %{http_version} %{http_code}", "\(gateway.url)/instant/h2"
            ])
        #expect(h2.stdout.hasSuffix("{\"ok\":true} 2 201"), "\(h2.stdout) \(h2.stderr)")
        #expect(h2.stdout.contains("\r\nx-request-id: h2-id\r\n"), "the canned answer's id over HTTP/2: \(h2.stdout)")
        gateway.stop()
    }
}
