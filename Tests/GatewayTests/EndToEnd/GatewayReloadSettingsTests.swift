import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a reload (SIGHUP) changes besides routes and upstreams: the logging settings and the server's limits apply to
/// the next request; settings that shape the listeners, loops or log output are named in a warning. And
/// `server.http2: false` turns HTTP/2 off, and `server.io_uring: false` batched sends.
@Suite(.serialized) struct GatewayReloadSettingsTests {
    static func config(logging: String, limits: String = "", threads: Int = 1) -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: \(threads)
        \(limits.isEmpty ? "" : "  limits: { \(limits) }")
        admin:
          listen: "127.0.0.1:ADMIN"
        logging: { \(logging) }
        upstreams:
          stubbed: { stub: { status: 200, body: "ok" } }
        routes:
          - { name: stub, match: { path: /stub }, upstream: stubbed }
        """
    }

    /// Rewrites the config, sends SIGHUP and waits for the reload's log line (the `count`-th one).
    static func reload(_ gateway: GatewayProcess, to config: String, count: Int) async throws {
        try gateway.rewriteConfig(config)
        gateway.signal(SIGHUP)
        try await waitForReloads(gateway, count: count)
    }

    /// Waits for the `count`-th reload's log line.
    static func waitForReloads(_ gateway: GatewayProcess, count: Int) async throws {
        for _ in 0..<100 {
            let output = gateway.stdout
            // The line is JSON (`"msg":"reloaded"`) or text (`notice reloaded routes=…`), as the logging then says.
            let logged =
                output.components(separatedBy: "\"reloaded\"").count
                + output.components(separatedBy: "reloaded routes").count - 2
            if logged >= count { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw GatewayTestError("no reload logged: \(gateway.stdout)")
    }

    /// The gateway reports ready only once its signal handlers are in place: SIGHUP and SIGUSR1 sent the moment
    /// `/readyz` answers 200 reload and reopen the log, rather than ending the process (their default action).
    @Test func signalsSentAsSoonAsItIsReadyAreHandled() async throws {
        for _ in 0..<3 {
            let gateway = try await GatewayProcess(config: Self.config(logging: "access_log: false"))
            gateway.signal(SIGUSR1)
            gateway.signal(SIGHUP)
            try await Self.waitForReloads(gateway, count: 1)
            #expect(gateway.process.isRunning)
            let answer = try await HTTPClient().execute(HTTPClientRequest(url: "\(gateway.url)/stub"))
            #expect(answer.status == 200)
            #expect(gateway.stop() == 0)
        }
    }

    @Test func aReloadAppliesTheLoggingSettingsToTheNextRequest() async throws {
        let gateway = try await GatewayProcess(config: Self.config(logging: "access_log: true"))
        let client = HTTPClient()
        _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stub?n=1"))
        try await Self.reload(gateway, to: Self.config(logging: "access_log: false"), count: 1)
        _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stub?n=2"))
        try await Self.reload(gateway, to: Self.config(logging: "access_log: true, format: text"), count: 2)
        _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stub?n=3"))
        gateway.stop()
        let output = gateway.stdout
        #expect(output.contains("\"path\":\"/stub?n=1\""), "JSON access line before the reloads: \(output)")
        #expect(!output.contains("/stub?n=2"), "no access line once access_log is off: \(output)")
        let textLine = output.split(separator: "\n").first { $0.contains("/stub?n=3") }
        #expect(textLine.map { !$0.hasPrefix("{") } == true, "a text access line after format: text: \(output)")
    }

    @Test func aReloadAppliesTheServersLimitsAndNamesWhatNeedsARestart() async throws {
        let gateway = try await GatewayProcess(config: Self.config(logging: "access_log: false"))
        let manyHeaders = (0..<12).map { "X-H\($0): v\r\n" }.joined()
        func status() throws -> String {
            let client = try RawClient(port: gateway.port)
            client.send("GET /stub HTTP/1.1\r\nHost: t\r\n\(manyHeaders)Connection: close\r\n\r\n")
            return String(client.read(until: { $0.contains("\r\n") }, timeout: 5).prefix(12))
        }
        #expect(try status() == "HTTP/1.1 200")
        try await Self.reload(
            gateway, to: Self.config(logging: "access_log: false", limits: "max_headers: 8", threads: 2),
            count: 1)
        #expect(try status() == "HTTP/1.1 431", "a new connection meets the reloaded max_headers")
        gateway.stop()
        let warning = gateway.stdout.split(separator: "\n").first { $0.contains("only after a restart") }
        #expect(warning?.contains("server.threads") == true, "the warning names server.threads: \(gateway.stdout)")
        #expect(warning?.contains("server.listen") == false)
    }

    @Test func http2CanBeTurnedOff() async throws {
        let config = Self.config(logging: "access_log: false").replacingOccurrences(
            of: "threads: 1", with: "threads: 1\n  http2: false")
        let gateway = try await GatewayProcess(config: config)
        let h2 = try ProcessRunner.run(
            "curl",
            [
                "-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_version}",
                "--max-time", "5", "\(gateway.url)/stub"
            ])
        #expect(h2.stdout != "2", "no HTTP/2 with server.http2: false: \(h2.stdout) \(h2.stderr)")
        let h1 = try ProcessRunner.run(
            "curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "\(gateway.url)/stub"])
        #expect(h1.stdout == "200 1.1")
        gateway.stop()
    }

    /// `server.io_uring: false` sends with one `sendmsg` per connection; the start-up line says whether the loops send
    /// in batches, and a reload that changes the key names it as needing a restart.
    @Test func ioUringCanBeTurnedOffAndTheStartLineSaysWhetherItIsUsed() async throws {
        let config = Self.config(logging: "access_log: false").replacingOccurrences(
            of: "threads: 1", with: "threads: 1\n  io_uring: false")
        let gateway = try await GatewayProcess(config: config)
        for _ in 0..<3 {
            let h1 = try ProcessRunner.run(
                "curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "\(gateway.url)/stub"])
            #expect(h1.stdout == "200")
        }
        try await Self.reload(gateway, to: Self.config(logging: "access_log: false"), count: 1)
        gateway.stop()
        let lines = gateway.stdout.split(separator: "\n")
        let listening = lines.first { $0.contains("\"msg\":\"listening\"") }
        #expect(
            listening?.contains("\"io_uring\":false") == true,
            "the start-up line says io_uring is off: \(gateway.stdout)")
        let warning = lines.first { $0.contains("only after a restart") }
        #expect(warning?.contains("server.io_uring") == true, "the warning names server.io_uring: \(gateway.stdout)")
    }
}
