import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `upstreams.X.circuit_breaker` through the real binary: failures in a row open the circuit, calls are then refused
/// with 503 and `Retry-After` without reaching the upstream, one trial call after `open_for` closes it again or keeps
/// it open, and a reload that changes neither the address nor the settings keeps the circuit.
@Suite(.serialized) struct GatewayCircuitBreakerTests {
    static func config(port: Int, breaker: String = "{ failures: 3, open_for: 1s }", extraRoute: String = "") -> String
    {
        """
        \(GatewayProcess.listeners)
        upstreams:
          flaky: { base_url: "http://127.0.0.1:\(port)", timeout: { connect: 1s, response: 2s }, circuit_breaker: \(breaker) }
        routes:
          - { name: all, match: { path_prefix: / }, upstream: flaky }
        \(extraRoute)
        """
    }

    static func get(_ client: HTTPClient, _ url: String) async throws -> HTTPClientResponse {
        try await client.execute(HTTPClientRequest(url: url))
    }

    static func metrics(_ gateway: GatewayProcess) async throws -> String {
        let response = try await HTTPClient().execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics"))
        return String(decoding: response.body, as: UTF8.self)
    }

    /// Waits (bounded) until the gateway's log mentions `text`.
    static func logged(_ gateway: GatewayProcess, _ text: String) async -> Bool {
        for _ in 0..<50 {
            if gateway.stdout.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Rewrites the configuration, sends SIGHUP and waits (bounded) for the reload's log line.
    static func reload(_ gateway: GatewayProcess, _ config: String) async throws {
        let before = gateway.stdout.components(separatedBy: "\"reloaded\"").count
        try gateway.rewriteConfig(config)
        gateway.signal(SIGHUP)
        for _ in 0..<100 where gateway.stdout.components(separatedBy: "\"reloaded\"").count == before {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(gateway.stdout.components(separatedBy: "\"reloaded\"").count > before, "reloaded")
    }

    @Test func failuresInARowOpenTheCircuitAndATrialCallClosesIt() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(port: upstream.port))
        let client = HTTPClient()

        for _ in 0..<3 {
            let failed = try await Self.get(client, "\(gateway.url)/status/503")
            #expect(
                failed.status == 503 && String(decoding: failed.body, as: UTF8.self) == "status 503",
                "the upstream's own 503")
        }
        #expect(upstream.requests.count == 3)

        let refused = try await Self.get(client, "\(gateway.url)/status/200")
        #expect(refused.status == 503)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("\"error\":\"service_unavailable\""))
        #expect(refused.headers.first(name: "Retry-After") == "1")
        #expect(refused.headers.first(name: "X-Request-Id") != nil)
        #expect(upstream.requests.count == 3, "a refused call never reaches the upstream")
        #expect(await Self.logged(gateway, "upstream circuit opened"))
        let open = try await Self.metrics(gateway)
        #expect(open.contains("moya_gateway_upstream_circuit_open{upstream=\"flaky\"} 1"), "\(open)")
        #expect(open.contains("moya_gateway_upstream_circuit_refused_total{upstream=\"flaky\"} 1"), "\(open)")
        let line = await gateway.accessLog(atLeast: 4).last { $0["path"] as? String == "/status/200" }
        #expect(line?["status"] as? Int == 503 && line?["upstream_error"] as? String == "circuit open")

        // After open_for, one trial call: it fails, so the circuit stays open.
        try await Task.sleep(for: .milliseconds(1100))
        let trial = try await Self.get(client, "\(gateway.url)/status/504")
        #expect(trial.status == 504 && upstream.requests.count == 4)
        #expect(try await Self.get(client, "\(gateway.url)/status/200").status == 503)
        #expect(upstream.requests.count == 4)
        #expect(await Self.logged(gateway, "upstream circuit stays open"))

        // The next trial succeeds: the circuit closes and calls flow again.
        try await Task.sleep(for: .milliseconds(1100))
        #expect(try await Self.get(client, "\(gateway.url)/status/200").status == 200)
        #expect(try await Self.get(client, "\(gateway.url)/status/201").status == 201)
        #expect(upstream.requests.count == 6)
        #expect(await Self.logged(gateway, "upstream circuit closed"))
        #expect(try await Self.metrics(gateway).contains("moya_gateway_upstream_circuit_open{upstream=\"flaky\"} 0"))
    }

    @Test func anUnreachableUpstreamIsRefusedAfterItsFailures() async throws {
        let closedPort = try freeLoopbackPort()
        let gateway = try await GatewayProcess(
            config: Self.config(port: closedPort, breaker: "{ failures: 2, open_for: 30s }"))
        let client = HTTPClient()
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 502)
        #expect(try await Self.get(client, "\(gateway.url)/b").status == 502)
        let refused = try await client.execute(
            HTTPClientRequest(method: .post, url: "\(gateway.url)/c", body: .bytes([1, 2])))
        #expect(
            refused.status == 503
                && refused.headers.first(name: "Retry-After").flatMap { Int($0) }.map { $0 > 25 } == true)
        let reasons = await gateway.accessLog(atLeast: 3).compactMap { $0["upstream_error"] as? String }
        #expect(reasons.count == 3 && reasons.last == "circuit open", "\(reasons)")
    }

    @Test func aReloadKeepsTheCircuitUnlessItsAddressOrSettingsChange() async throws {
        let closedPort = try freeLoopbackPort()
        let breaker = "{ failures: 1, open_for: 30s }"
        let gateway = try await GatewayProcess(config: Self.config(port: closedPort, breaker: breaker))
        let client = HTTPClient()
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 502)
        #expect(try await Self.get(client, "\(gateway.url)/a").headers.first(name: "Retry-After") != nil)

        // Same settings, another route: still open.
        try await Self.reload(
            gateway,
            Self.config(
                port: closedPort, breaker: breaker,
                extraRoute: "  - { name: other, match: { path: /other }, upstream: flaky }"))
        let afterReload = try await Self.get(client, "\(gateway.url)/other")
        #expect(
            afterReload.status == 503 && afterReload.headers.first(name: "Retry-After") != nil, "the circuit survived")

        // Another address (same settings): a new circuit, closed, so the call goes out: 502 (and it opens again).
        let otherPort = try freeLoopbackPort()
        try await Self.reload(gateway, Self.config(port: otherPort, breaker: breaker))
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 502)
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 503)

        // New settings: a new circuit too.
        try await Self.reload(gateway, Self.config(port: otherPort, breaker: "{ failures: 2, open_for: 30s }"))
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 502)
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 502)
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 503)
        #expect(try await Self.metrics(gateway).contains("moya_gateway_upstream_circuit_open{upstream=\"flaky\"} 1"))

        // No circuit_breaker any more: calls go out again, and the gauge does not stay at 1.
        try await Self.reload(
            gateway,
            """
            \(GatewayProcess.listeners)
            upstreams:
              flaky: { base_url: "http://127.0.0.1:\(otherPort)" }
            routes:
              - { name: all, match: { path_prefix: / }, upstream: flaky }
            """)
        #expect(try await Self.get(client, "\(gateway.url)/a").status == 502)
        #expect(try await Self.metrics(gateway).contains("moya_gateway_upstream_circuit_open{upstream=\"flaky\"} 0"))
    }
}
