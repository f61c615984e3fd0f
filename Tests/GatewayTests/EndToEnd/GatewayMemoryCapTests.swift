import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// RES-03: the gateway in a 256 MiB memory cgroup survives the memory-hungry hostile loads of docs/reliability.md at once
/// (an HPACK bomb, a stalled HTTP/2 stream over a 64 MiB answer, clients that stop reading long answers, and a 1 GiB
/// relay to a fast client): no OOM kill, and the group's peak charge stays under the cap.
///
/// Runs where a v1 memory cgroup can be made (root with `/sys/fs/cgroup/memory`); skipped elsewhere.
@Suite(.serialized, .enabled(if: MemoryCgroup.isAvailable, "needs a writable cgroup v1 memory hierarchy"))
struct GatewayMemoryCapTests {
    static let cap = 256 << 20
    static let slowReaders = 16

    /// Response buffering is on, with temporary files capped at 64 MiB in all: their page cache is charged to the
    /// group too (reclaimable, but a charge at the cap all the same), and the slow readers' 4 GiB would fill it.
    static func config(upstreamPort: Int) -> String {
        """
        \(GatewayProcess.listeners.replacingOccurrences(of: "threads: 1", with: "threads: 1\n  limits: { send_timeout: 3s }\n  buffering: { max_temp_total: 64MiB }"))
        upstreams:
          up: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 60s }, pool: { max_connections: 64 } }
          stub: { stub: { status: 200, body: "stub" } }
        routes:
          - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
          - { name: stub, match: { path: /stub }, upstream: stub }
        """
    }

    /// The cap is real: a process that touches twice the cap in a group of the same size is killed (rc 137), so the
    /// gateway's survival below means it stayed under the cap, not that nothing enforced it.
    @Test func aProcessOverTheCapIsKilled() throws {
        let group = try MemoryCgroup(name: "moya-gw-res03-control", limit: Self.cap)
        defer { group.remove() }
        let script = "echo $$ > '\(group.path)/cgroup.procs' && python3 -c 'b = b\"x\" * (\(2 * Self.cap))'; echo rc=$?"
        let run = try ProcessRunner.run("/bin/sh", ["-c", script], timeout: 60)
        #expect(run.stdout.contains("rc=137"), "\(run.stdout) \(run.stderr)")
        #expect(group.oomKills == 1)
    }

    @Test func theGatewaySurvivesTheHostileLoadsTogetherUnderTheCap() async throws {
        let upstream = try await ConformanceUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let group = try MemoryCgroup(name: "moya-gw-res03", limit: Self.cap)
        defer { group.remove() }
        try group.add(gateway.process.processIdentifier)
        let port = gateway.port
        let url = gateway.url

        // The loads run on threads of their own (`offPool`): blocking two of the cooperative pool's threads would
        // starve the in-process upstream on a two-CPU machine.
        // UP-08: 1 GiB to a client reading as fast as it can.
        let relay = Task {
            try await offPool {
                try ProcessRunner.run(
                    "curl",
                    [
                        "-sS", "--http1.1", "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                        "\(url)/up/big?mb=1024"
                    ], timeout: 240)
            }
        }
        // H2-04 and H2-10: an HPACK bomb, then a stream stalled by a zero window over a 64 MiB answer.
        let script = GatewayHTTP2ConformanceTests.suiteScript
        let hostileHTTP2 = Task {
            try await offPool {
                try ProcessRunner.run(
                    "/usr/bin/python3",
                    [
                        script, "--port", String(port), "--big-mb", "64", "--hold", "3",
                        "H2-04", "H2-10"
                    ], timeout: 120)
            }
        }
        // SLOW-03: clients that ask for 256 MiB each and then take 32 bytes a second.
        let readers = try (0..<Self.slowReaders).map { _ in try RawClient(port: port) }
        for reader in readers { reader.send("GET /up/big?mb=256 HTTP/1.1\r\nHost: t\r\n\r\n") }
        var chunk = [UInt8](repeating: 0, count: 32)
        for _ in 0..<10 {
            for reader in readers { _ = recv(reader.fd, &chunk, chunk.count, Int32(MSG_DONTWAIT)) }
            try await Task.sleep(for: .seconds(1))
        }
        // By now the send timeout has closed them: what is left is what the socket buffers held, then the close.
        let leftovers = try await offPool { readers.map { $0.readAll(timeout: 3) } }

        let relayed = try await relay.value
        let http2 = try await hostileHTTP2.value
        let results = GatewayHTTP2ConformanceTests.results(http2)
        for reader in readers { reader.resetOnClose() }

        #expect(group.oomKills == 0, "the gateway was OOM-killed under a \(Self.cap >> 20) MiB cap")
        #expect(gateway.process.isRunning, "the gateway is still running")
        // The cap is over three times what the loads need here (a peak charge of 73 MiB in the debug build), so
        // reaching it means memory that grows with a hostile load.
        #expect(
            group.peakUsage < group.limit,
            "peak charge \(group.peakUsage >> 20) MiB reached the \(group.limit >> 20) MiB cap (\(group.failures) failed charges)"
        )
        #expect(group.failures == 0, "\(group.failures) charges hit the cap and needed reclaim")
        #expect(relayed.stdout == "200 \(1 << 30)", "UP-08: the whole 1 GiB body: \(relayed.stdout) \(relayed.stderr)")
        for name in ["H2-04", "H2-10"] {
            let result = try #require(results[name], "\(name) did not run: \(http2.stdout) \(http2.stderr)")
            #expect(result.passed, "\(name): \(result.detail)")
        }
        let closed = leftovers.filter { $0.closed && $0.bytes.count < 32 << 20 }.count
        #expect(
            closed == Self.slowReaders,
            "SLOW-03: \(closed) of \(Self.slowReaders) slow readers closed at the 3 s send timeout")
        let health = try ProcessRunner.run(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                "http://127.0.0.1:\(gateway.adminPort)/healthz"
            ])
        #expect(health.stdout == "200", "the gateway still answers: \(health.stdout) \(health.stderr)")
        let next = try ProcessRunner.run("curl", ["-sS", "\(url)/stub"])
        #expect(next.stdout == "stub")
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }
}
