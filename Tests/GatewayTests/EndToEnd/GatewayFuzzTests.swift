import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// Bounded fuzzing of what the gateway reads from outside: the bytes clients send (`faults/wire_fuzz.py`), the bytes
/// upstreams answer (`faults/upstream_fuzz.py`) and its configuration files (`faults/config_fuzz.py`). Nothing may
/// trap (a trap is a denial of service for every client) and a bad file must be refused with its place. The seeds are
/// fixed (threads and timing still vary a run); the scripts keep the inputs that broke it. Longer campaigns: run the
/// scripts by hand with more `--cases` and other seeds.
@Suite(.serialized, .enabled(if: nothingLostHarnessAvailable(), "needs moya-gateway built and Debian's python3-h2"))
struct GatewayFuzzTests {
    static let faults = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("faults")

    /// The script's JSON summary (its last stdout line).
    static func summary(_ output: ProcessRunner.Output) -> [String: Any] {
        let last = output.stdout.split(separator: "\n").last.map(String.init) ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any] ?? [:]
    }

    /// 2,000 mutated HTTP/1.1, h2c and TLS byte streams (well-formed seeds with bit flips, cuts, splices, huge and
    /// negative numbers, stray CR/LF and NUL, mangled ClientHellos) at a gateway with every kind of route: proxied
    /// with a rewrite, instant and delayed stubs with injected errors, coalesced, gzip on. The process lives through
    /// all of them, every access-log line is whole JSON with no secret in it, and afterwards it still proxies and
    /// drains to exit 0. Every request that reached the upstream is one the gateway logged for it.
    @Test func hostileBytesNeverStopTheGateway() async throws {
        let upstream = try await RecordingUpstream.start()
        let directory = ProcessRunner.temporaryDirectory("gateway-wire-fuzz")
        let certificates = try ProcessRunner.makeCertificates(in: directory)
        let tlsPort = try freeLoopbackPort()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 2
                  http2: true
                  compression: { gzip: true, min_bytes: 16 }
                  limits: { max_body_bytes: 64KiB, max_header_bytes: 8KiB, header_timeout: 2s, body_timeout: 2s }
                  tls:
                    listen: ["127.0.0.1:\(tlsPort)"]
                    certificate: \(certificates.cert)
                    private_key: \(certificates.key)
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  up:
                    base_url: "http://127.0.0.1:\(upstream.port)"
                    timeout: { response: 2s }
                    access_token: { token: fuzz-secret-token }
                  stub: { stub: { status: 200, headers: { Content-Type: application/json }, body: '{"a":1}' } }
                  slow:
                    stub:
                      status: 200
                      body_bytes: 300KiB
                      error_rate: 0.2
                      latency: { distribution: uniform, min: 1ms, max: 20ms }
                routes:
                  - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
                  - { name: stub, match: { path: /stub }, upstream: stub }
                  - { name: slow, match: { path: /slow }, upstream: slow }
                  - { name: shared, match: { path_params: "/shared/{id}" }, upstream: slow, coalesce: true }
                """)
        let output = try ProcessRunner.run(
            "/usr/bin/python3",
            [
                Self.faults.appendingPathComponent("wire_fuzz.py").path, "--port", String(gateway.port),
                "--tls-port", String(tlsPort), "--pid", String(gateway.process.processIdentifier), "--cases", "2000",
                "--deadline", "90", "--seed", "1", "--dir", directory
            ], timeout: 150)
        let summary = Self.summary(output)
        #expect(output.status == 0, "\(output.stdout) \(output.stderr.suffix(2000))")
        #expect(
            summary["alive"] as? Bool == true,
            "crash inputs: \(summary["crash_inputs"] ?? "-"); \(gateway.stderr.suffix(2000))")
        let cases = summary["cases"] as? Int ?? 0
        #expect(cases >= 1000, "the run stopped early: \(summary)")
        #expect(summary["tls_cases"] as? Int ?? 0 >= cases / 10, "\(summary)")

        let client = HTTPClient()
        let after = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/up/after"))
        #expect(after.status == 200)
        #expect(upstream.requests.contains { $0.head.target == "/after" })

        #expect(gateway.stop() == 0, "drains and exits 0 after the hostile traffic")
        let lines = gateway.stdout.split(separator: "\n")
        #expect(lines.count > 100)
        let unparsed = lines.filter { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) == nil }
        #expect(unparsed.isEmpty, "lines that are not JSON: \(unparsed.prefix(3))")
        #expect(!gateway.stdout.contains("fuzz-secret-token") && !gateway.stderr.contains("fuzz-secret-token"))
        #expect(!gateway.stderr.contains("Fatal error"))

        // Nothing smuggled: every request that reached the upstream is one the gateway routed there and logged (by
        // request id), with a plain origin-form target, one Host and the injected token.
        let logged = Set(
            gateway.accessLog.filter { $0["route"] as? String == "up" }
                .compactMap { $0["request_id"] as? String })
        let received = upstream.requests
        #expect(received.count > 10, "some fuzzed requests were well-formed enough to be proxied")
        for request in received {
            let id = request.head.headers.first(name: "X-Request-Id")
            #expect(id.map(logged.contains) == true, "an upstream request the gateway did not log: \(request.head)")
            #expect(request.head.target.hasPrefix("/") && !request.head.target.contains(" "), "\(request.head.target)")
            #expect(request.head.headers["Host"].count == 1, "\(request.head)")
            #expect(request.head.headers.first(name: "Authorization") == "Bearer fuzz-secret-token")
        }
        await upstream.server.shutdown(timeout: .seconds(1))
    }

    /// 400 requests through the gateway to upstreams that answer with hostile bytes (`faults/upstream_fuzz.py`):
    /// mutated HTTP/1.1 responses (broken status lines and fields, lying lengths, bad chunking, gzip bodies, 1xx
    /// heads, cuts), mutated h2c sessions and hostile TLS servers (garbage handshakes, cut records, mutated answers
    /// inside TLS), on plain, coalesced and validated routes; the HTTP/1.1 and h2c upstreams list a refusing server
    /// beside the hostile one (`servers`). The gateway lives through all of them, answers every request with a status
    /// line of its own (a 502 or 504 for what it cannot relay), never leaks the upstream's token, and drains to exit
    /// 0. The routes' 2 s deadline bounds an upstream that trickles a body a byte at a time
    /// (the driver gives up after 4 s of silence).
    @Test func hostileUpstreamsNeverStopTheGateway() async throws {
        let h1Port = try freeLoopbackPort()
        let h2Port = try freeLoopbackPort()
        let tlsPort = try freeLoopbackPort()
        // A server that refuses connections beside the hostile ones: requests take turns, and pass it over.
        let deadPort = try freeLoopbackPort()
        let certificates = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory("upstream-fuzz"))
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 2
                  compression: { gzip: true, min_bytes: 16 }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  h1:
                    base_url: "http://h1.fuzz.invalid:\(h1Port)"
                    servers: ["127.0.0.1:\(h1Port)", "127.0.0.1:\(deadPort)"]
                    timeout: { connect: 1s, response: 1s }
                  h1valid:
                    base_url: "http://127.0.0.1:\(h1Port)"
                    timeout: { response: 1s }
                    validation: success
                    access_token: { token: upstream-fuzz-secret }
                  h2:
                    base_url: "http://h2.fuzz.invalid:\(h2Port)"
                    servers: ["127.0.0.1:\(deadPort)", "127.0.0.1:\(h2Port)"]
                    timeout: { response: 1s }
                    pool: { http2: always }
                  tls:
                    base_url: "https://localhost:\(tlsPort)"
                    timeout: { connect: 1s, response: 1s }
                    tls: { ca_file: \(certificates.ca) }
                routes:
                  - { name: h1, match: { path_prefix: /h1/ }, upstream: h1, rewrite: { strip_prefix: /h1 }, timeout: 2s }
                  - { name: h1shared, match: { path_prefix: /h1shared }, upstream: h1, coalesce: true, timeout: 2s }
                  - { name: h1valid, match: { path_prefix: /h1valid }, upstream: h1valid, timeout: 2s }
                  - { name: h2, match: { path_prefix: /h2 }, upstream: h2, timeout: 2s }
                  - { name: tls, match: { path_prefix: /tls }, upstream: tls, timeout: 2s }
                """)
        let output = try ProcessRunner.run(
            "/usr/bin/python3",
            [
                Self.faults.appendingPathComponent("upstream_fuzz.py").path, "--h1-port", String(h1Port),
                "--h2-port", String(h2Port), "--tls-port", String(tlsPort), "--cert", certificates.cert,
                "--key", certificates.key, "--gateway-port", String(gateway.port),
                "--pid", String(gateway.process.processIdentifier), "--cases", "400", "--deadline", "90", "--seed", "1"
            ], timeout: 150)
        let summary = Self.summary(output)
        #expect(output.status == 0, "\(output.stdout) \(output.stderr.suffix(2000))")
        #expect(summary["alive"] as? Bool == true, "\(gateway.stderr.suffix(2000))")
        #expect(summary["cases"] as? Int == 400, "\(summary)")
        #expect(summary["answered"] as? Int == 400, "every request gets an answer: \(summary)")
        let statuses = summary["statuses"] as? [String: Int] ?? [:]
        #expect(statuses["502", default: 0] > 0 && statuses["200", default: 0] > 0, "\(statuses)")
        #expect(gateway.stop() == 0)
        let tls = gateway.accessLog.filter { $0["route"] as? String == "tls" }.compactMap { $0["status"] as? Int }
        #expect(tls.contains { $0 < 500 } && tls.contains(502), "answers over TLS and refused handshakes: \(tls)")
        #expect(!gateway.stdout.contains("upstream-fuzz-secret") && !gateway.stderr.contains("upstream-fuzz-secret"))
        #expect(!gateway.stderr.contains("Fatal error"))
    }

    /// 400 mutated configuration files (the shipped ones, parsed and changed: values of the wrong type or out of
    /// range, keys dropped or unknown, list items duplicated; or changed as text) through `check`: each is accepted
    /// or refused with exit 1 and its first error naming `file:line`, never a crash or an unlocated error.
    @Test func mutatedConfigsAreRefusedWithTheirPlaceNeverACrash() throws {
        let binary = try #require(CheckCommandTests.binary())
        let directory = ProcessRunner.temporaryDirectory("gateway-config-fuzz")
        // server.pem, server.key and ca.pem: the names Configuration/examples/tls.yaml reads from MOYA_TLS_DIR.
        _ = try ProcessRunner.makeCertificates(in: directory)
        let configuration = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Configuration")
        try FileManager.default.copyItem(
            atPath: configuration.appendingPathComponent("stubs").path,
            toPath: "\(directory)/stubs")
        let examples = configuration.appendingPathComponent("examples").path
        let seeds =
            try FileManager.default.contentsOfDirectory(atPath: examples)
            .filter { $0.hasSuffix(".yaml") }.map { configuration.appendingPathComponent("examples/\($0)").path }
            + [configuration.appendingPathComponent("gateway.yaml").path]
        var environment = ProcessInfo.processInfo.environment
        environment.merge([
            "MOYA_TLS_DIR": directory, "BILLING_KEY": "k1", "BILLING_PASSWORD": "p", "WEB_KEY": "k2",
            "USERS_TOKEN": "t"
        ]) { $1 }
        let output = try ProcessRunner.run(
            "/usr/bin/python3",
            [
                Self.faults.appendingPathComponent("config_fuzz.py").path, "--gateway", binary.path, "--cases", "400",
                "--seed", "1", "--dir", directory
            ] + seeds, environment: environment, timeout: 120)
        let summary = Self.summary(output)
        #expect(output.status == 0, "\(output.stdout.suffix(3000)) \(output.stderr.suffix(2000))")
        #expect(summary["cases"] as? Int == 400, "\(output.stdout) \(output.stderr.suffix(2000))")
        #expect((summary["defects"] as? [Any])?.isEmpty == true, "\(summary["defects"] ?? "-")")
        // Both outcomes are exercised: the mutations are not all syntax errors, nor all harmless.
        #expect(summary["accepted"] as? Int ?? 0 >= 20, "\(summary)")
        #expect(summary["rejected"] as? Int ?? 0 >= 200, "\(summary)")
    }
}
