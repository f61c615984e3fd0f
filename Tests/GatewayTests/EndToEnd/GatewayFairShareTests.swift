import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// The fair share of a full upstream pool (`upstreams.X.pool.max_share`, issue #37) through the real binary: a greedy
/// caller (one `X-Forwarded-For` address behind `trusted_proxies`) saturates a pool of 4 HTTP/1.1 connections, or an
/// HTTP/2 connection allowing 4 streams, to an upstream taking 1.5 s per call; another caller arriving later is served
/// at the first connection that frees up, while the greedy caller's excess waits behind it and gets 503 at the
/// pool's 2 s `max_wait`. First come, first served (`max_share: 1`), the other caller waits behind the greedy one's
/// queue and gets 503 itself.
@Suite(.serialized) struct GatewayFairShareTests {
    enum Case: String, CaseIterable, CustomTestStringConvertible {
        case shareHTTP1, firstComeHTTP1, shareHTTP2
        var testDescription: String { rawValue }
        var share: String { self == .firstComeHTTP1 ? "1" : "50%" }
        var http2: Bool { self == .shareHTTP2 }
    }

    @Test(arguments: Case.allCases)
    func aGreedyCallerCannotHoldMoreThanItsShare(_ scenario: Case) async throws {
        let upstream = ConformanceUpstream()
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 4
        let server = HTTPServer(
            configuration: .init(
                listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!],
                http2Settings: settings),
            group: try EventLoopGroup(threads: 1), handler: upstream)
        try await server.start()
        let pool =
            scenario.http2
            ? "{ http2: always, max_wait: 2s, max_share: \(scenario.share) }"
            : "{ max_connections: 4, http2: never, max_wait: 2s, max_share: \(scenario.share) }"
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  trusted_proxies: [127.0.0.1]
                admin:
                  listen: "127.0.0.1:ADMIN"
                logging: { access_log: false }
                upstreams:
                  up: { base_url: "http://127.0.0.1:\(server.localAddresses[0].port)", timeout: { response: 30s }, pool: \(pool) }
                routes:
                  - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
                """)
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerOrigin = 64
        configuration.http2 = .never
        let client = HTTPClient(configuration: configuration)
        let url = "\(gateway.url)/up/slow?ms=1500"
        @Sendable func calls(_ count: Int, as caller: String) async -> [(status: Int, seconds: Double)] {
            await withTaskGroup(of: (Int, Double).self) { group in
                for _ in 0..<count {
                    group.addTask {
                        let started = ContinuousClock.now
                        let status =
                            (try? await client.execute(
                                HTTPClientRequest(url: url, headers: ["X-Forwarded-For": caller])))?.status ?? -1
                        let elapsed = (ContinuousClock.now - started).components
                        return (status, Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let greedy = Task { await calls(16, as: "203.0.113.66") }
        try await Task.sleep(for: .milliseconds(300))
        let other = await calls(2, as: "198.51.100.7")
        let greedyResults = await greedy.value
        let greedyStatuses = greedyResults.map(\.status)

        #expect(upstream.peakInFlight <= 4, "the pool's limit holds: \(upstream.peakInFlight)")
        if scenario == .firstComeHTTP1 {
            #expect(other.map(\.status) == [503, 503], "queued behind the greedy caller: \(other)")
        } else {
            #expect(other.map(\.status) == [200, 200], "served at the first connection freed: \(other)")
            #expect(other.allSatisfy { $0.seconds < 2.9 }, "\(other)")
            #expect(greedyStatuses.contains(503), "the greedy caller's excess waited and got 503: \(greedyStatuses)")
            #expect(greedyStatuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(greedyStatuses)")
            let waits = gateway.metric("moya_gateway_upstream_fair_share_waits_total{upstream=\"up\"}") ?? 0
            #expect(waits >= 1, "passed-over requests are counted: \(waits)")
        }
        client.shutdown()
        #expect(gateway.stop() == 0)
        await server.shutdown(timeout: .seconds(1))
    }
}
