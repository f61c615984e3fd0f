import Foundation
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// The hostile HTTP/2 clients of docs/reliability.md §2.2 (H2-01 .. H2-17, `Tests/HTTPServerCoreTests/HTTP2/h2/h2spec.py`) against
/// the real `moya-gateway` binary, h2c on its cleartext listener and h2 over TLS, proxying to an upstream that records
/// what reached it.
@Suite(.serialized) struct GatewayHTTP2ConformanceTests {
    static let suiteScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("HTTPServerCoreTests/HTTP2/h2/h2spec.py").path

    static func gatewayConfig(upstreamPort: Int, tlsPort: Int, certificates: (ca: String, cert: String, key: String))
        -> String
    {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          tls:
            listen: ["127.0.0.1:\(tlsPort)"]
            certificate: \(certificates.cert)
            private_key: \(certificates.key)
        admin:
          listen: "127.0.0.1:ADMIN"
        logging: { access_log: false }
        upstreams:
          up: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 30s }, pool: { max_connections: 256 } }
          stub: { stub: { status: 200, body: "stub" } }
        routes:
          - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
          - { name: stub, match: { path: /stub }, upstream: stub }
        """
    }

    struct CaseResult: Decodable {
        var `case`: String
        var passed: Bool
        var detail: String
    }

    static func results(_ output: ProcessRunner.Output) -> [String: CaseResult] {
        var results: [String: CaseResult] = [:]
        for line in output.stdout.split(separator: "\n") {
            if let result = try? JSONDecoder().decode(CaseResult.self, from: Data(line.utf8)) {
                results[result.case] = result
            }
        }
        return results
    }

    @Test func hostileHTTP2ClientsAreStoppedAndNeverReachTheUpstream() async throws {
        let upstream = try await ConformanceUpstream.start()
        let directory = ProcessRunner.temporaryDirectory("gateway-h2spec")
        let certificates = try ProcessRunner.makeCertificates(in: directory)
        let tlsPort = try freeLoopbackPort()
        let gateway = try await GatewayProcess(
            config: Self.gatewayConfig(
                upstreamPort: upstream.port, tlsPort: tlsPort,
                certificates: certificates))
        let output = try ProcessRunner.run(
            "/usr/bin/python3",
            [
                Self.suiteScript, "--port", String(gateway.port), "--tls-port", String(tlsPort), "--ca", certificates.ca
            ], timeout: 240)
        #expect(output.status == 0, "\(output.stderr)")
        let results = Self.results(output)
        let expected = (1...17).filter { $0 != 10 }.map { String(format: "H2-%02d", $0) }
        for name in expected {
            let result = try #require(results[name], "\(name) did not run: \(output.stdout) \(output.stderr)")
            #expect(result.passed, "\(name): \(result.detail)")
        }

        // What reached the upstream.
        let targets = upstream.targets
        for tag in ["h2-02", "h2-03", "h2-04-b", "h2-05", "h2-08", "h2-12", "h2-13", "h2-14", "h2-15"] {
            #expect(
                !targets.contains { $0.contains("tag=\(tag)&") || $0.hasSuffix("tag=\(tag)") },
                "a request of \(tag) was forwarded: \(targets.filter { $0.contains(tag) })")
        }
        #expect(upstream.peakInFlight <= 100, "upstream requests in flight never exceed MAX_CONCURRENT_STREAMS")
        #expect(targets.allSatisfy { !$0.contains(" ") && !$0.contains("\r") && !$0.contains("\n") })
        #expect(upstream.hostHeaders.allSatisfy { $0.count == 1 }, "exactly one Host on every forwarded request")

        // And the gateway still serves.
        let after = try ProcessRunner.run("curl", ["-s", "--http2-prior-knowledge", "\(gateway.url)/up/after"])
        #expect(after.stdout == "ok")
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// H2-10: a stream stalled by a zero window over a 64 MiB answer. On a `buffering: false` route the upstream is
    /// read only as far as the buffers in between; with buffering (the default) the upstream's answer is read whole
    /// into a temporary file meanwhile (its connection free again), and in both the gateway's memory stays flat.
    @Test(arguments: [false, true])
    func aStalledStreamHoldsDataBack(buffering: Bool) async throws {
        let upstream = try await ConformanceUpstream.start()
        let directory = ProcessRunner.temporaryDirectory("gateway-h2spec-window")
        let certificates = try ProcessRunner.makeCertificates(in: directory)
        var config = Self.gatewayConfig(
            upstreamPort: upstream.port, tlsPort: try freeLoopbackPort(),
            certificates: certificates)
        if !buffering {
            config = config.replacingOccurrences(
                of: "rewrite: { strip_prefix: /up } }",
                with: "rewrite: { strip_prefix: /up }, buffering: false }")
        }
        let gateway = try await GatewayProcess(config: config)
        let pid = gateway.process.processIdentifier
        let baseline = Self.residentKiB(pid)
        let port = gateway.port
        let script = Self.suiteScript
        let run = Task {
            try await offPool {
                try ProcessRunner.run(
                    "/usr/bin/python3", [script, "--port", String(port), "--big-mb", "64", "--hold", "3", "H2-10"],
                    timeout: 60)
            }
        }
        // The script stalls the stream for about 4 s (headers, a 1 s wait, five 1-byte drips, a 3 s hold): sample
        // the gateway's memory meanwhile.
        var peak = baseline
        var producedWhileStalled = 0
        for round in 0..<25 {
            try await Task.sleep(for: .milliseconds(200))
            peak = max(peak, Self.residentKiB(pid))
            if round == 15 { producedWhileStalled = upstream.producedBytes }
        }
        let output = try await run.value
        let result = try #require(Self.results(output)["H2-10"], "\(output.stdout) \(output.stderr)")
        #expect(result.passed, "\(result.detail)")
        #expect(
            peak - baseline < 16 * 1024,
            "gateway RSS grew \((peak - baseline) / 1024) MiB for a 64 MiB response held back")
        if buffering {
            // Read through while the client held the stream back: the upstream's part was over in moments.
            #expect(producedWhileStalled == 64 << 20, "the upstream was read whole meanwhile: \(producedWhileStalled)")
        } else {
            // Read only as far as the buffers in between: the relay's, the client's, and the kernel's loopback
            // socket buffers (several MiB with autotuning), far from the 64 MiB the upstream would send.
            #expect(
                upstream.producedBytes < 16 << 20,
                "the upstream was read only as far as the buffers: \(upstream.producedBytes)")
        }
        gateway.stop()
        await upstream.shutdown()
    }

    /// VmRSS of `pid` in KiB (0 when unreadable).
    static func residentKiB(_ pid: Int32) -> Int { ProcessMemory.resident(pid) / 1024 }
}

/// The upstream for the conformance suite: records request targets and Host headers, tracks requests in flight;
/// `/slow?ms=N` waits (cancellably), `/big?mb=N` streams N MiB with back-pressure, anything else answers `ok`.
final class ConformanceUpstream: HTTPServerHandler {
    private struct State {
        var targets: [String] = []
        var hosts: [[String]] = []
        var inFlight = 0
        var peak = 0
        var produced = 0
    }

    private let state = Locked(State())
    private let serving = LoopbackServer()

    var port: Int { serving.port }
    var targets: [String] { state.withLock { $0.targets } }
    var hostHeaders: [[String]] { state.withLock { $0.hosts } }
    var peakInFlight: Int { state.withLock { $0.peak } }
    /// Bytes the `/big` producers have handed to the server so far.
    var producedBytes: Int { state.withLock { $0.produced } }

    static func start() async throws -> ConformanceUpstream {
        let upstream = ConformanceUpstream()
        try await upstream.serving.start(upstream)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let head = request.head
        state.withLock {
            $0.targets.append(head.target)
            $0.hosts.append(head.headers["Host"])
            $0.inFlight += 1
            $0.peak = max($0.peak, $0.inFlight)
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        _ = try? await request.body.collect(upTo: 1 << 20)
        let path = String(head.path)
        let query = head.query.map(String.init) ?? ""
        func parameter(_ name: String) -> Int? {
            query.split(separator: "&").first { $0.hasPrefix("\(name)=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
        }
        if path == "/slow" {
            try? await Task.sleep(for: .milliseconds(parameter("ms") ?? 100))
        }
        if path == "/big" {
            let bytes = (parameter("mb") ?? 1) << 20
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 200, headers: ["Content-Length": String(bytes)]),
                body: .stream(bigBody(bytes: bytes)))
        }
        return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("ok".utf8))
    }

    /// `bytes` of `x`, produced only as fast as the connection takes them.
    private func bigBody(bytes: Int) -> ByteStream {
        let (demand, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let stream = ByteStream(onDemand: { signal.yield() })
        Task { [self] in
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
            var iterator = demand.makeAsyncIterator()
            var sent = 0
            while sent < bytes, !stream.isFinished {
                sent += chunk.count
                state.withLock { $0.produced += chunk.count }
                if !stream.yield(chunk) { _ = await iterator.next() }
            }
            stream.finish()
        }
        return stream
    }
}
