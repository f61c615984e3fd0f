import Foundation
import Gateway
import TestSupport
import Testing

/// Runs the built `moya-gateway` binary (build it with `swift build` before `swift test`).
@Suite struct CheckCommandTests {
    static func binary() -> URL? { BuiltProducts.executable(named: "moya-gateway") }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        guard let binary = binary() else { throw CancellationError() }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "MOYA_GATEWAY_CONFIG")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try ChildProcess.launch(process)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        let status = ProcessRunner.waitForExit(process, timeout: 60)
        return (status, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func checkGoodConfig() throws {
        let result = try Self.run(["check"])
        #expect(result.status == 0)
        #expect(result.stdout == "ok: 5 routes, 4 upstreams\n")
        #expect(result.stderr.isEmpty)
        let viaEnv = try Self.run(["check"], environment: ["MOYA_GATEWAY_CONFIG": "Configuration/gateway.yaml"])
        #expect(viaEnv.status == 0)
    }

    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func versionPrintsTheVersion() throws {
        let result = try Self.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == GatewayVersion.current + "\n")
    }

    /// A broken config reported into a closed stderr (`2>&-`) still ends with status 1, not a trap.
    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func checkWithStderrClosedExitsCleanly() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moya-check-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        try "server: { bogus: 1 }\n".write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "exec \"$0\" check --config \"$1\" >/dev/null 2>&-", try #require(Self.binary()).path, file.path
        ]
        try ChildProcess.launch(process)
        #expect(ProcessRunner.waitForExit(process, timeout: 60) == 1, "exit status 1, not a signal")
    }

    /// TLS-08: `check` (and `serve`) build the TLS context `serve` would: a key that does not match the certificate, an
    /// expired certificate and one not valid yet are refused with the file, line, key and reason.
    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func checkRefusesAServerCertificateThatCannotBeServed() throws {
        let directory = ProcessRunner.temporaryDirectory("moya-check-tls")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = try ProcessRunner.makeCertificates(in: directory)
        let expired = try ProcessRunner.makeCertificate(
            in: directory + "/expired", notBefore: "20200101000000Z",
            notAfter: "20200201000000Z")
        let future = try ProcessRunner.makeCertificate(
            in: directory + "/future", notBefore: "20990101000000Z",
            notAfter: "20990201000000Z")
        func check(certificate: String, key: String) throws -> (status: Int32, stdout: String, stderr: String) {
            let file = directory + "/gw-\(UUID().uuidString).yaml"
            try """
            server:
              listen: ["127.0.0.1:18999"]
              tls:
                listen: ["127.0.0.1:18998"]
                certificate: \(certificate)
                private_key: \(key)
            upstreams:
              s: { stub: { status: 200 } }
            routes:
              - { name: s, match: { path: /s }, upstream: s }
            """.write(toFile: file, atomically: true, encoding: .utf8)
            return try Self.run(["check", "--config", file])
        }
        #expect(try check(certificate: good.cert, key: good.key).status == 0)
        let mismatched = try check(certificate: good.cert, key: expired.key)
        #expect(mismatched.status == 1)
        #expect(mismatched.stderr.contains(":5: server.tls.certificate: private key"), "\(mismatched.stderr)")
        let old = try check(certificate: expired.cert, key: expired.key)
        #expect(old.status == 1)
        #expect(
            old.stderr.contains(
                "server.tls.certificate: certificate \(expired.cert) expired on 2020-02-01 00:00:00 UTC"),
            "\(old.stderr)")
        let early = try check(certificate: future.cert, key: future.key)
        #expect(early.status == 1)
        #expect(early.stderr.contains("is not valid before 2099-01-01 00:00:00 UTC"), "\(early.stderr)")
    }

    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func checkBrokenConfig() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("moya-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("bad.yaml")
        try """
        upstreams:
          a: { base_url: "http://x", access_token: { token: "${MOYA_TEST_UNSET_TOKEN}" } }
        routes:
          - name: r
            match: { path_prefix: /api }
            upstream: missing
            timeout: 0s
        """.write(to: file, atomically: true, encoding: .utf8)
        let result = try Self.run(["check", "--config", file.path])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr.split(separator: "\n") == [
                "\(file.path):2: upstreams.a.access_token.token: environment variable MOYA_TEST_UNSET_TOKEN is not set",
                "\(file.path):6: routes[0].upstream: unknown upstream 'missing' (not defined under upstreams)",
                "\(file.path):7: routes[0].timeout: must be greater than 0"
            ])

        // A YAML syntax error keeps the `FILE:LINE: key.path: reason` form, with `(yaml)` for the key path.
        try "upstreams:\n  a: [1, 2\nroutes: []\n".write(to: file, atomically: true, encoding: .utf8)
        let syntax = try Self.run(["check", "--config", file.path])
        #expect(syntax.status == 1)
        #expect(syntax.stderr.hasPrefix("\(file.path):3: (yaml): YAML syntax error at column "), "\(syntax.stderr)")
        #expect(syntax.stderr.split(separator: "\n").count == 1)
    }

    /// What `serve` could not start with is a `check` error too: a listener host name (listeners bind without
    /// resolving names) and a log file that cannot be written.
    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func checkRefusesWhatServeCouldNotStart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("moya-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("unstartable.yaml")
        let logDirectory = directory.appendingPathComponent("missing").path
        try """
        server: { listen: ["gateway.internal:8080"] }
        logging: { output: \(logDirectory)/gw.log }
        upstreams: {}
        routes: []
        """.write(to: file, atomically: true, encoding: .utf8)
        let expected = [
            "\(file.path):1: server.listen[0]: invalid listen address 'gateway.internal:8080' (use IP:port, localhost:port or [IPv6]:port)",
            "\(file.path):2: logging.output: no such directory: \(logDirectory)/gw.log"
        ]
        for command in ["check", "serve"] {
            let result = try Self.run([command, "--config", file.path])
            #expect(result.status == 1, "\(command)")
            #expect(result.stdout.isEmpty, "\(command)")
            #expect(result.stderr.split(separator: "\n").map(String.init) == expected, "\(command)")
        }
    }

    /// CFG-05: `serve` on a port another process holds (the listener's or the admin's) exits 1 at once, naming the
    /// file, the address and the reason; nothing is left running.
    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func serveOnAPortInUseExitsWithTheReason() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("moya-busy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let busy = try UnansweredListener()
        let free = try freeLoopbackPort()
        for (name, listen, admin) in [("listener", busy.port, free), ("admin", free, busy.port)] {
            let file = directory.appendingPathComponent("\(name).yaml")
            try """
            server: { listen: ["127.0.0.1:\(listen)"], threads: 1 }
            admin: { listen: "127.0.0.1:\(admin)" }
            upstreams:
              canned: { stub: { status: 200 } }
            routes:
              - { name: a, match: { path: /a }, upstream: canned }
            """.write(to: file, atomically: true, encoding: .utf8)
            let result = try Self.run(["serve", "--config", file.path])
            #expect(result.status == 1, "\(name)")
            #expect(
                result.stderr.contains("\(file.path): cannot start: bind 127.0.0.1:\(busy.port)"), "\(result.stderr)")
            #expect(result.stderr.contains("Address already in use"), "\(result.stderr)")
        }
    }

    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func routesAndBrokenServe() throws {
        let routes = try Self.run(["routes"])
        #expect(routes.status == 0)
        // The shipped file's table in precedence order (exact, then longest prefix or template, then file order),
        // one row per route, columns split on runs of spaces.
        let rows = routes.stdout.split(separator: "\n").map {
            $0.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        #expect(
            rows == [
                ["#", "NAME", "MATCH", "HOST", "METHODS", "UPSTREAM", "REWRITE", "FLAGS"],
                ["1", "slow", "path /api/slow", "*", "*", "slow", "-", "stub timeout 1s"],
                [
                    "2", "user-by-id", "params /api/users/{id}", "*", "GET,HEAD,PUT,DELETE", "users", "strip /api",
                    "stub timeout 2s"
                ],
                [
                    "3", "catalog", "prefix /api/catalog", "*", "GET,HEAD", "catalog", "-",
                    "stub coalesce(vary: Accept,Accept-Encoding)"
                ],
                ["4", "users", "prefix /api/users", "*", "GET,HEAD,POST", "users", "strip /api", "stub"],
                ["5", "bulk", "prefix /bulk", "*", "GET,HEAD", "bulk", "-", "stub coalesce"]
            ], "\(routes.stdout)")
        // `serve` runs the same loader: a broken file stops it before anything is bound (serving itself is covered
        // by the end-to-end tests).
        let serve = try Self.run(["serve", "--config", "/nonexistent/gw.yaml"])
        #expect(serve.status == 1)
        #expect(serve.stderr == "/nonexistent/gw.yaml:1: (file): cannot read the configuration file\n")
        let missing = try Self.run(["check", "--config", "/nonexistent/gw.yaml"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "/nonexistent/gw.yaml:1: (file): cannot read the configuration file\n")
    }
}
