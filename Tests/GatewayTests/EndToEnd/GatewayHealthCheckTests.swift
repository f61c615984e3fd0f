import Foundation
import HTTPClient
import HTTPServer
import HTTPWire
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
}

/// An upstream instance that says who it is, whose `/healthz` answers 200 or 503 as the test sets it.
private final class Instance: Sendable {
    let server: HTTPServer
    let port: Int
    private let health = InstanceHealth()

    init(name: String) async throws {
        let health = self.health
        let server = HTTPServer(configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
                                group: try EventLoopGroup(threads: 1), handler: HTTPHandlerClosure { request in
            if request.head.path == "/healthz" {
                health.probes.add(1, ordering: .relaxed)
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
}

/// `health_check`: each address of an upstream is probed; one that fails its checks gets no requests until it passes
/// again, and when all fail, all are used.
@Suite(.serialized) struct GatewayHealthCheckTests {
    @Test func aFailingInstanceIsTakenOutAndBroughtBack() async throws {
        let one = try await Instance(name: "one")
        let two = try await Instance(name: "two")
        let gateway = try await GatewayProcess(config: """
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
            if try await answers(6)["two"] == nil { outAfter = attempt; break }
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
        #expect(metrics.contains("moya_gateway_upstream_server_healthy{upstream=\"api\",server=\"127.0.0.1:\(two.port)\"} 0"),
                "\(metrics)")
        #expect(metrics.contains("moya_gateway_upstream_server_healthy{upstream=\"api\",server=\"127.0.0.1:\(one.port)\"} 1"))

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
}
