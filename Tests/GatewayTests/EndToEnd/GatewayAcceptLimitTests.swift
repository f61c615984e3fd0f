import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// FD-01 through the real binary: with the descriptor limit at 64, connections past it wait in the backlog while the
/// failed accepts are counted (`moya_gateway_accepts_refused_total{reason="fd_limit"}`) and said once on stderr (at
/// most once a minute); once clients leave, the gateway accepts and serves again.
@Suite(.serialized) struct GatewayAcceptLimitTests {
    @Test func acceptsRefusedAtTheDescriptorLimitAreCountedReportedOnceAndRecoveredFrom() async throws {
        let gateway = try await GatewayProcess(
            config: GatewayProcess.listeners + """

                logging: { access_log: false }
                upstreams:
                  canned: { stub: { status: 200, body: "ok" } }
                routes:
                  - { name: hello, match: { path: /hello }, upstream: canned }
                """, shellPrefix: "ulimit -n 64; ")
        let marker = "accepting connections failed"
        var clients = try (0..<80).map { _ in try RawClient(port: gateway.port) }
        for _ in 0..<50 where !gateway.stderr.contains(marker) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(gateway.stderr.contains("\(marker) 1 time: out of file descriptors"), "\(gateway.stderr)")
        // Accepting is retried every 100 ms meanwhile, and fails each time: still one line.
        try await Task.sleep(for: .seconds(1))
        #expect(gateway.stderr.components(separatedBy: marker).count - 1 == 1, "\(gateway.stderr)")
        clients.removeAll()
        let client = HTTPClient()
        var hello: Int?
        for _ in 0..<50 {
            hello = (try? await client.execute(HTTPClientRequest(url: "\(gateway.url)/hello")))?.status
            if hello == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(hello == 200, "served again once the clients left")
        let metrics = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics"))
        let text = String(decoding: metrics.body, as: UTF8.self)
        let prefix = "moya_gateway_accepts_refused_total{reason=\"fd_limit\"} "
        let refused = text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap {
            Int($0.dropFirst(prefix.count))
        }
        #expect(
            (refused ?? 0) >= 5, "counted every failed accept (retried every 100 ms): \(String(describing: refused))")
        client.shutdown()
        #expect(gateway.stop() == 0)
    }
}
