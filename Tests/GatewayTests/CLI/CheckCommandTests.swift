import Foundation
import TestSupport
import Testing

/// Runs the built `moya-gateway` binary (build it with `swift build` before `swift test`).
@Suite struct CheckCommandTests {
    static func binary() -> URL? { BuiltProducts.executable(named: "moya-gateway") }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws
        -> (status: Int32, stdout: String, stderr: String) {
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
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
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

    /// A broken config reported into a closed stderr (`2>&-`) still ends with status 1, not a trap.
    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func checkWithStderrClosedExitsCleanly() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("moya-check-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        try "server: { bogus: 1 }\n".write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec \"$0\" check --config \"$1\" >/dev/null 2>&-", try #require(Self.binary()).path, file.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 1)
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
        #expect(result.stderr.split(separator: "\n") == [
            "\(file.path):2: upstreams.a.access_token.token: environment variable MOYA_TEST_UNSET_TOKEN is not set",
            "\(file.path):6: routes[0].upstream: unknown upstream 'missing' (not defined under upstreams)",
            "\(file.path):7: routes[0].timeout: must be greater than 0",
        ])
    }

    @Test(.enabled(if: binary() != nil, "build moya-gateway with `swift build` first"))
    func routesAndBrokenServe() throws {
        let routes = try Self.run(["routes"])
        #expect(routes.status == 0)
        #expect(routes.stdout.hasPrefix("#  NAME"))
        #expect(routes.stdout.contains("params /api/users/{id}"))
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
