import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What an instance's `/healthz` answers, and how often it was asked.
private final class InstanceHealth: Sendable {
    let healthy = Atomic<Bool>(true)
    let probes = Atomic<Int>(0)
    /// The fields of the last probe.
    let lastProbe = Locked<HTTPFields>([:])
}

/// An upstream instance that says who it is, whose `/healthz` answers 200 or 503 as the test sets it.
private final class Instance: Sendable {
    let server: HTTPServer
    let port: Int
    private let health = InstanceHealth()

    /// With `key`, `/healthz` answers 401 to a probe without `X-Health-Key: key`.
    init(name: String, key: String? = nil) async throws {
        let health = self.health
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1),
            handler: HTTPHandlerClosure { request in
                if request.head.path == "/healthz" {
                    health.probes.add(1, ordering: .relaxed)
                    health.lastProbe.withLock { $0 = request.head.headers }
                    if let key, request.head.headers.first(name: "X-Health-Key") != key {
                        return HTTPServerResponse(status: 401, body: [])
                    }
                    return HTTPServerResponse(status: health.healthy.load(ordering: .relaxed) ? 200 : 503, body: [])
                }
                return HTTPServerResponse(status: 200, body: Array(name.utf8))
            })
        try await server.start()
        self.server = server
        port = server.localAddresses[0].port
    }

    func setHealthy(_ value: Bool) { health.healthy.store(value, ordering: .relaxed) }
    var probeCount: Int { health.probes.load(ordering: .relaxed) }
    var lastProbe: HTTPFields { health.lastProbe.withLock { $0 } }
}

/// `health_check`: each address of an upstream is probed; one that fails its checks gets no requests until it passes
/// again, and when all fail, all are used.
@Suite(.serialized) struct GatewayHealthCheckTests {
    @Test func aFailingInstanceIsTakenOutAndBroughtBack() async throws {
        let one = try await Instance(name: "one")
        let two = try await Instance(name: "two")
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  api:
                    base_url: "http://api.internal:\(one.port)"
                    servers: ["127.0.0.1:\(one.port)", "127.0.0.1:\(two.port)"]
                    health_check: { path: /healthz, interval: 100ms, timeout: 500ms, unhealthy_after: 2, healthy_after: 2 }
                routes:
                  - { name: api, match: { path_prefix: /api }, upstream: api }
                """)
        let client = HTTPClient()
        func answers(_ count: Int) async throws -> [String: Int] {
            var seen: [String: Int] = [:]
            for _ in 0..<count {
                let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/who"))
                seen[String(decoding: response.body, as: UTF8.self), default: 0] += 1
            }
            return seen
        }
        #expect(try await answers(10) == ["one": 5, "two": 5], "both healthy: in turn")
        two.setHealthy(false)
        var outAfter = 0
        for attempt in 1...40 {
            try await Task.sleep(for: .milliseconds(50))
            if try await answers(6)["two"] == nil {
                outAfter = attempt
                break
            }
        }
        #expect(outAfter > 0, "instance two was taken out")
        #expect(try await answers(20) == ["one": 20], "no request goes to a failing instance")
        // A reload that keeps the upstream's addresses keeps the failing instance out.
        gateway.signal(SIGHUP)
        for _ in 0..<100 where !gateway.stdout.contains("\"reloaded\"") { try await Task.sleep(for: .milliseconds(20)) }
        #expect(gateway.stdout.contains("\"reloaded\""))
        #expect(try await answers(10) == ["one": 10], "still out after the reload")
        let metricsURL = "http://127.0.0.1:\(gateway.adminPort)/metrics"
        let metrics = String(decoding: try await client.execute(HTTPClientRequest(url: metricsURL)).body, as: UTF8.self)
        #expect(
            metrics.contains(
                "moya_gateway_upstream_server_healthy{upstream=\"api\",server=\"127.0.0.1:\(two.port)\"} 0"),
            "\(metrics)")
        #expect(
            metrics.contains(
                "moya_gateway_upstream_server_healthy{upstream=\"api\",server=\"127.0.0.1:\(one.port)\"} 1"))

        // Both failing: better a failing instance's answer than none.
        one.setHealthy(false)
        try await Task.sleep(for: .milliseconds(600))
        #expect(try await answers(10) == ["one": 5, "two": 5], "all out is all in")

        // One passes again: it alone serves; then two does, and both serve in turn.
        one.setHealthy(true)
        var oneBack = false
        for _ in 1...40 where !oneBack {
            try await Task.sleep(for: .milliseconds(50))
            oneBack = try await answers(6) == ["one": 6]
        }
        #expect(oneBack, "instance one came back, two stayed out")
        two.setHealthy(true)
        var bothBack = false
        for _ in 1...40 where !bothBack {
            try await Task.sleep(for: .milliseconds(50))
            bothBack = try await answers(6) == ["one": 3, "two": 3]
        }
        #expect(bothBack, "instance two came back")
        #expect(one.probeCount > 5 && two.probeCount > 5)
        gateway.stop()
        #expect(gateway.stdout.contains("upstream server failed its health checks, taken out"))
        #expect(gateway.stdout.contains("\"reason\":\"status 503\""), "\(gateway.stdout)")
        #expect(gateway.stdout.contains("upstream server passes its health checks again"))
        await one.server.shutdown(timeout: .seconds(1))
        await two.server.shutdown(timeout: .seconds(1))
    }

    /// `health_check.headers` go with every probe (over the upstream's `headers` and the probe's `User-Agent`): a
    /// health endpoint that wants a key keeps its instance in; the key is read from a secret file and never logged.
    @Test func probesCarryTheirOwnHeaders() async throws {
        let keyed = try await Instance(name: "keyed", key: "health-key-5d1c")
        let open = try await Instance(name: "open")
        let directory = ProcessRunner.temporaryDirectory("gateway-health-headers")
        try "health-key-5d1c\n".write(toFile: directory + "/health.key", atomically: true, encoding: .utf8)
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  api:
                    base_url: "http://127.0.0.1:\(keyed.port)"
                    servers: ["127.0.0.1:\(keyed.port)", "127.0.0.1:\(open.port)"]
                    headers: { X-From: gateway, User-Agent: configured }
                    health_check:
                      path: /healthz
                      interval: 50ms
                      unhealthy_after: 1
                      headers: { X-Health-Key: "${file:\(directory)/health.key}", User-Agent: prober/1 }
                routes:
                  - { name: api, match: { path_prefix: /api }, upstream: api }
                """)
        for _ in 0..<100 where keyed.probeCount < 4 || open.probeCount < 4 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let client = HTTPClient()
        var seen: [String: Int] = [:]
        for _ in 0..<10 {
            let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/who"))
            seen[String(decoding: response.body, as: UTF8.self), default: 0] += 1
        }
        #expect(seen == ["keyed": 5, "open": 5], "the keyed instance passes its checks")
        let probe = keyed.lastProbe
        #expect(probe.first(name: "X-Health-Key") == "health-key-5d1c")
        #expect(probe.first(name: "User-Agent") == "prober/1")
        #expect(probe.first(name: "X-From") == "gateway")
        gateway.stop()
        #expect(!gateway.stdout.contains("taken out"), "\(gateway.stdout)")
        #expect(!gateway.stdout.contains("health-key-5d1c") && !gateway.stderr.contains("health-key-5d1c"))
        await keyed.server.shutdown(timeout: .seconds(1))
        await open.server.shutdown(timeout: .seconds(1))
    }
}
