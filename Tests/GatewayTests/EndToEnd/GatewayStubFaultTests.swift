import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// Stub faults (issue 39) as real clients see them. On the client's connection (`mode: client`): curl and Python's
/// http.client get a reset, an end of file, a parse error, a truncated body and a slow body over HTTP/1.1; Python's
/// h2 gets RST_STREAM on that stream only, the connection going on. As a failing upstream (`mode: upstream`): the
/// gateway answers 502 and 504, retries what the route retries, and counts the failures in the upstream's circuit.
@Suite(.serialized, .enabled(if: nothingLostHarnessAvailable(), "needs moya-gateway built and Debian's python3-h2"))
struct GatewayStubFaultTests {
    static let config = """
        \(GatewayProcess.listeners)
        upstreams:
          faulty:
            stub:
              headers: { Content-Type: text/plain }
              responses:
                - { match: { path: /reset }, faults: [{ type: connection_reset, rate: 1 }] }
                - { match: { path: /empty }, faults: [{ type: empty_response, rate: 1 }] }
                - { match: { path: /malformed }, faults: [{ type: malformed_response, rate: 1 }] }
                - { match: { path: /truncated }, body: "0123456789abcdefghij", faults: [{ type: truncated_body, rate: 1 }] }
                - { match: { path: /slow }, body: "0123456789abcdefghij", faults: [{ type: slow_body, rate: 1, duration: 1s }] }
                - { match: { path: /ok }, body: fine }
          failing:
            stub:
              responses:
                - { match: { path: /reset }, faults: [{ type: connection_reset, rate: 1, mode: upstream }] }
                - { match: { path: /malformed }, faults: [{ type: malformed_response, rate: 1, mode: upstream }] }
                - { match: { path: /slow }, body: late, faults: [{ type: slow_body, rate: 1, duration: 3s, mode: upstream }] }
                - match: { path: /flaky }
                  sequence: [{ faults: [{ type: connection_reset, rate: 1, mode: upstream }] }, { body: recovered }]
            circuit_breaker: { failures: 3, open_for: 30s }
        routes:
          - { name: faulty, match: { path_prefix: /f }, upstream: faulty, rewrite: { strip_prefix: /f } }
          - { name: failing, match: { path_prefix: /u }, upstream: failing, rewrite: { strip_prefix: /u }, timeout: 1s,
              retries: { attempts: 2 } }
        """

    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/stub_fault_client.py").path

    @Test func clientFaultsAreSeenAsSuchByCurlAndPython() async throws {
        let gateway = try await GatewayProcess(config: Self.config)
        let port = gateway.port
        let output = try await offPool {
            try ProcessRunner.run(
                "/usr/bin/python3", [Self.client, "--port", String(port), "--prefix", "/f"], timeout: 60)
        }
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data((output.stdout.split(separator: "\n").last ?? "").utf8))
                as? [String: Any], "\(output.stdout) \(output.stderr)")
        let http1 = try #require(report["http1"] as? [String: [String: Any]])
        #expect(http1["reset"]?["outcome"] as? String == "reset")
        #expect(http1["empty"]?["outcome"] as? String == "eof")
        #expect(http1["malformed"]?["outcome"] as? String == "parse_error")
        #expect(http1["truncated"]?["outcome"] as? String == "truncated")
        #expect(http1["truncated"]?["received"] as? Int == 10)
        #expect(http1["slow"]?["outcome"] as? String == "ok" && http1["slow"]?["length"] as? Int == 20)
        #expect(
            (http1["slow"]?["body_seconds"] as? Double ?? 0) >= 0.8,
            "the body took the fault's second: \(http1["slow"] ?? [:])")
        #expect(http1["ok"]?["status"] as? Int == 200)

        let http2 = try #require(report["http2"] as? [String: [String: Any]])
        #expect(http2["reset"]?["outcome"] as? String == "reset:INTERNAL_ERROR")
        #expect(http2["empty"]?["outcome"] as? String == "reset:CANCEL")
        #expect(http2["malformed"]?["outcome"] as? String == "reset:PROTOCOL_ERROR")
        #expect(http2["truncated"]?["outcome"] as? String == "reset:INTERNAL_ERROR")
        #expect(http2["truncated"]?["received"] as? Int == 10, "half the body, then the reset")
        #expect(http2["slow"]?["outcome"] as? String == "ok" && http2["slow"]?["received"] as? Int == 20)
        #expect(http2["ok"]?["outcome"] as? String == "ok")
        #expect(
            (report["http2_after"] as? [String: Any])?["outcome"] as? String == "ok",
            "the connection outlives its streams' faults")
        #expect(report["http2_connection_closed"] as? Bool == false)

        // curl's own words for them.
        func curlExit(_ path: String) throws -> Int32 {
            try ProcessRunner.run("curl", ["-sS", "-o", "/dev/null", "--max-time", "10", "\(gateway.url)/f\(path)"])
                .status
        }
        #expect(try curlExit("/reset") == 56, "Recv failure: Connection reset by peer")
        #expect(try curlExit("/empty") == 52, "Empty reply from server")
        #expect([1, 8].contains(try curlExit("/malformed")), "not an HTTP response")
        #expect(try curlExit("/truncated") == 18, "transfer closed with bytes remaining")
        #expect(try curlExit("/ok") == 0)
        gateway.stop()
        let lines = gateway.accessLog
        #expect(
            lines.contains {
                $0["status"] as? Int == 444 && $0["upstream_error"] as? String == "stub fault: connection_reset"
            })
        #expect(
            lines.contains {
                $0["status"] as? Int == 200 && $0["upstream_error"] as? String == "stub fault: truncated_body"
            })
    }

    @Test func upstreamFaultsGive502And504AreRetriedAndOpenTheCircuit() async throws {
        let gateway = try await GatewayProcess(config: Self.config)
        let client = HTTPClient()
        func get(_ path: String) async throws -> HTTPClientResponse {
            try await client.execute(
                HTTPClientRequest(url: "\(gateway.url)/u\(path)", headers: ["X-Request-Id": "id\(path)"]))
        }
        let flaky = try await get("/flaky")
        #expect(
            flaky.status == 200 && String(decoding: flaky.body, as: UTF8.self) == "recovered",
            "the reset is retried (GET, attempts: 2) and the sequence's next step answers")
        let malformed = try await get("/malformed")
        #expect(malformed.status == 502)
        let started = ContinuousClock.now
        let slow = try await get("/slow")
        #expect(slow.status == 504, "a 3 s body past the route's 1 s timeout")
        #expect(ContinuousClock.now - started < .milliseconds(2500))
        let reset = try await get("/reset")
        #expect(reset.status == 502)
        let refused = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/u/flaky"))
        #expect(refused.status == 503, "three failures in a row opened the circuit")
        #expect(refused.headers.first(name: "Retry-After") != nil)
        let metrics = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics"))
        #expect(
            String(decoding: metrics.body, as: UTF8.self).contains(
                "moya_gateway_upstream_circuit_open{upstream=\"failing\"} 1"))
        gateway.stop()
        let lines = gateway.accessLog
        func line(_ id: String) -> [String: Any]? { lines.first { $0["request_id"] as? String == id } }
        #expect(line("id/flaky")?["retries"] as? Int == 1)
        #expect(line("id/malformed")?["upstream_error"] as? String == "stub fault: malformed_response")
        #expect(line("id/malformed")?["retries"] as? Int == 0, "a malformed answer is not retried, as from an upstream")
        #expect(line("id/slow")?["status"] as? Int == 504)
        #expect(line("id/reset")?["upstream_error"] as? String == "stub fault: connection_reset")
        #expect(line("id/reset")?["retries"] as? Int == 1)
        #expect(lines.contains { $0["status"] as? Int == 503 && $0["upstream_error"] as? String == "circuit open" })
    }
}
