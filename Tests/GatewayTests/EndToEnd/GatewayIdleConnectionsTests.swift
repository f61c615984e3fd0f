import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// RES-01 and LIFE-07 through the real binary: 10,000 idle client connections (half never sent a byte, half are
/// kept alive after one request) are held in a bounded memory per connection while other callers are served; the
/// idle and header timeouts reclaim every one of them, and SIGTERM closes them at once instead of draining for its
/// full timeout.
@Suite(.serialized) struct GatewayIdleConnectionsTests {
    static let count = 10_000

    static let config = """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          limits: { idle_timeout: 10s, header_timeout: 10s, max_connections: 12000, drain_timeout: 30s }
        admin:
          listen: "127.0.0.1:ADMIN"
        logging: { access_log: false }
        upstreams:
          canned: { stub: { status: 200, body: "ok" } }
        routes:
          - { name: hello, match: { path: /hello }, upstream: canned }
        """

    /// The gateway's open descriptors.
    static func descriptors(_ gateway: GatewayProcess) -> Int {
        let path = "/proc/\(gateway.process.processIdentifier)/fd"
        return (try? FileManager.default.contentsOfDirectory(atPath: path).count) ?? -1
    }

    /// What the gateway's descriptors point at (for a failure message).
    static func descriptorTargets(_ gateway: GatewayProcess) -> [String] {
        let path = "/proc/\(gateway.process.processIdentifier)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.map { (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(path)/\($0)")) ?? "?" }
            .sorted()
    }

    /// Opens `count` connections, the even ones silent and the odd ones after one answered request, in steps that
    /// let the gateway's accept queue drain; returns them once the gateway holds them all.
    static func openIdleConnections(to gateway: GatewayProcess, baseline: Int) async throws -> [RawClient] {
        var clients: [RawClient] = []
        clients.reserveCapacity(count)
        while clients.count < count {
            let step = try (0..<500).map { _ in try RawClient(port: gateway.port) }
            for (index, client) in step.enumerated() where index % 2 == 1 {
                client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            }
            for (index, client) in step.enumerated() where index % 2 == 1 {
                let answer = client.read(until: { $0.hasSuffix("ok") }, timeout: 5)
                #expect(answer.hasPrefix("HTTP/1.1 200"), "a request before idling: \(answer.prefix(40))")
            }
            clients += step
        }
        for _ in 0..<100 where descriptors(gateway) < baseline + count - 3 {
            try await Task.sleep(for: .milliseconds(50))
        }
        return clients
    }

    @Test func tenThousandIdleConnectionsAreHeldCheaplyAndReclaimedByTheTimeouts() async throws {
        let gateway = try await GatewayProcess(config: Self.config)
        let pid = gateway.process.processIdentifier
        let baseline = Self.descriptors(gateway)
        let idleResident = ProcessMemory.resident(pid)
        let clients = try await Self.openIdleConnections(to: gateway, baseline: baseline)
        // (Within a few: the baseline may still count the readiness probe's admin connection.)
        #expect(Self.descriptors(gateway) >= baseline + Self.count - 3, "the gateway holds every connection")
        let perConnection = (ProcessMemory.resident(pid) - idleResident) / Self.count
        #expect(perConnection < 16 * 1024, "\(perConnection) bytes of RSS per idle connection")
        // Others are still served while they are held.
        let client = HTTPClient()
        var statuses: [Int] = []
        for _ in 0..<20 {
            statuses.append((try? await client.execute(HTTPClientRequest(url: "\(gateway.url)/hello")))?.status ?? -1)
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        client.shutdown()
        // Past the 10 s timeouts (well past the time it takes to open them all, a few seconds on a busy machine),
        // every connection is closed by the gateway and its descriptor given back.
        var now = Self.descriptors(gateway)
        for _ in 0..<250 where now > baseline {
            try await Task.sleep(for: .milliseconds(100))
            now = Self.descriptors(gateway)
        }
        #expect(
            now <= baseline,
            "descriptors \(baseline) before, \(now) after the timeouts: \(Self.descriptorTargets(gateway))")
        let closed = clients.filter { $0.readAll(timeout: 0.01).closed }.count
        #expect(closed == Self.count, "\(closed) of \(Self.count) clients saw the gateway close")
        #expect(gateway.stop() == 0)
    }

    @Test func sigtermClosesTenThousandIdleConnectionsAtOnce() async throws {
        let gateway = try await GatewayProcess(config: Self.config)
        let clients = try await Self.openIdleConnections(to: gateway, baseline: Self.descriptors(gateway))
        let started = ContinuousClock.now
        let status = gateway.stop(timeout: 20)
        let took = ContinuousClock.now - started
        #expect(status == 0)
        // Idle connections have nothing to drain: the exit does not wait for the 30 s drain timeout.
        #expect(took < .seconds(10), "exit took \(took)")
        let closed = clients.filter { $0.readAll(timeout: 0.01).closed }.count
        #expect(closed == Self.count, "\(closed) of \(Self.count) clients saw the gateway close")
    }
}
