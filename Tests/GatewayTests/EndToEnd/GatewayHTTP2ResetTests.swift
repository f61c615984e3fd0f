import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// RST-06 and RST-07 through the real binary: a client that cancels every stream, each reset in a write of its own,
/// gets at most the concurrent-stream limit's worth of requests to the upstream and a GOAWAY that says why, while other
/// clients are served; a CONTINUATION flood ends with a GOAWAY naming it.
@Suite(.serialized) struct GatewayHTTP2ResetTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/h2_abuse.py").path

    static func config(upstreamPort: Int) -> String {
        GatewayProcess.listeners + """

            logging: { access_log: false }
            upstreams:
              up: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 30s }, pool: { max_connections: 256 } }
            routes:
              - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
            """
    }

    struct GoAway: Decodable {
        var code: String
        var last: Int
        var debug: String
    }

    struct Outcome: Decodable {
        var sent: Int?
        var goaway: GoAway?
        var closed: Bool
    }

    static func run(_ arguments: [String]) async throws -> (Outcome, String) {
        let output = try await offPool { try ProcessRunner.run("/usr/bin/python3", [script] + arguments, timeout: 60) }
        guard output.status == 0, let line = output.stdout.split(separator: "\n").last,
            let outcome = try? JSONDecoder().decode(Outcome.self, from: Data(line.utf8))
        else {
            throw GatewayTestError("h2_abuse.py \(arguments): \(output.stdout) \(output.stderr)")
        }
        return (outcome, String(line))
    }

    @Test(arguments: [1.0, 0.0])
    func streamsCancelledOneByOneGetAtMostTheStreamLimitToTheUpstream(pauseMilliseconds: Double) async throws {
        let upstream = try await ConformanceUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        // Another client meanwhile, on connections of its own.
        let client = HTTPClient()
        let url = "\(gateway.url)/up/other"
        let served = Task {
            var statuses: [Int] = []
            for _ in 0..<40 {
                statuses.append((try? await client.execute(HTTPClientRequest(url: url)))?.status ?? -1)
                try? await Task.sleep(for: .milliseconds(10))
            }
            return statuses
        }
        let (outcome, line) = try await Self.run([
            "reset-flood", "--port", String(gateway.port), "--path", "/up/slow?ms=3000&tag=rr",
            "--streams", "1000", "--pause-ms", String(pauseMilliseconds)
        ])
        let goaway = try #require(outcome.goaway, "no GOAWAY: \(line)")
        #expect(goaway.code == "ENHANCE_YOUR_CALM", "\(line)")
        #expect(goaway.debug.contains("rapid reset"), "\(line)")
        #expect(goaway.last <= 2 * 101, "\(line)")
        #expect((outcome.sent ?? 0) < 1000, "the flood was stopped: \(line)")
        // Cancelled requests already on their way arrive (or not) within a moment.
        try await Task.sleep(for: .milliseconds(300))
        let reached = upstream.targets.filter { $0.contains("tag=rr") }.count
        #expect(reached <= 100, "\(reached) cancelled requests reached the upstream (\(line))")
        let statuses = await served.value
        #expect(statuses == Array(repeating: 200, count: 40), "other clients: \(statuses.filter { $0 != 200 })")
        client.shutdown()
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    @Test func aContinuationFloodEndsWithAGoAwayNamingIt() async throws {
        let upstream = try await ConformanceUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let (outcome, line) = try await Self.run([
            "continuation-flood", "--port", String(gateway.port), "--path", "/up/cont?tag=cf"
        ])
        let goaway = try #require(outcome.goaway, "no GOAWAY: \(line)")
        #expect(goaway.code == "ENHANCE_YOUR_CALM", "\(line)")
        #expect(goaway.debug == "CONTINUATION flood", "\(line)")
        #expect(outcome.closed, "\(line)")
        #expect(!upstream.targets.contains { $0.contains("tag=cf") })
        let after = try ProcessRunner.run("curl", ["-s", "--http2-prior-knowledge", "\(gateway.url)/up/after"])
        #expect(after.stdout == "ok")
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }
}
