import Foundation
import TestSupport
import Testing

/// SEC-01: secrets a client sends (`Authorization`, `Cookie`, `Proxy-Authorization`, an API key, secret query
/// parameters) never reach the gateway's output at the most verbose log level, on the success path or any error path
/// (401, 404, 405, 413, 431, a malformed request line, 502, 504), and never come back in the gateway's own error bodies.
@Suite(.serialized) struct SecretCanaryTests {
    static func config(upstreamPort: Int) -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          limits: { drain_timeout: 5s, max_body_bytes: 1KiB, max_header_bytes: 2KiB }
        admin:
          listen: "127.0.0.1:ADMIN"
        logging:
          level: trace
          access_log: true
        clients:
          api_keys: { header: X-Api-Key, keys: { app: "${APP_KEY}" } }
        upstreams:
          echo: { base_url: "http://127.0.0.1:\(upstreamPort)/v1" }
          dead: { base_url: "http://127.0.0.1:1", timeout: { connect: 500ms } }
        routes:
          - { name: open, match: { path_prefix: /open }, upstream: echo, rewrite: { strip_prefix: /open }, timeout: 300ms }
          - { name: guarded, match: { path_prefix: /guarded }, upstream: echo, clients: [app] }
          - { name: dead, match: { path_prefix: /dead }, upstream: dead }
        """
    }

    /// Every secret the requests carry; none may appear in any log line or error body.
    static let canaries = ["CANARY_A", "CANARY_B", "CANARY_C", "CANARY_D", "CANARY_E", "CANARY_F", "CANARY_G"]

    /// The secret-bearing fields, with `key` as the API key (a valid one, or the canary of a wrong one).
    static func secretHeaders(key: String) -> String {
        "Authorization: Bearer CANARY_A\r\nCookie: s=CANARY_B\r\nProxy-Authorization: Basic CANARY_E\r\n"
            + "X-Api-Key: \(key)\r\n"
    }

    static let secretQuery = "token=CANARY_D&api_key=CANARY_F&a=1"

    @Test func noSecretReachesTheLogOrAnErrorBodyOnAnyPath() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.config(upstreamPort: upstream.port),
            environment: ["APP_KEY": "CANARY_G"])
        func exchange(_ request: String) -> String {
            guard let client = try? RawClient(port: gateway.port) else { return "" }
            client.send(request)
            return String(decoding: client.readAll(timeout: 3).bytes, as: UTF8.self)
        }
        let valid = Self.secretHeaders(key: "CANARY_G")
        let wrong = Self.secretHeaders(key: "CANARY_C")
        let cases: [(expected: String, request: String)] = [
            ("401", "GET /guarded/x?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(wrong)Connection: close\r\n\r\n"),
            ("404", "GET /nowhere?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)Connection: close\r\n\r\n"),
            ("405", "TRACE /open/x?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)Connection: close\r\n\r\n"),
            ("413", "POST /open/x?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)Content-Length: 5000\r\n\r\n"),
            (
                "431",
                "GET /open/x?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)X-Pad: \(String(repeating: "p", count: 3000))\r\n\r\n"
            ),
            ("400", "GET /open/x?\(Self.secretQuery) HTTP/1.1 CANARY_D\r\nHost: g\r\n\(valid)\r\n"),
            ("502", "GET /dead/x?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)Connection: close\r\n\r\n"),
            (
                "504",
                "GET /open/slow?ms=2000&\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)Connection: close\r\n\r\n"
            )
        ]
        for (expected, request) in cases {
            let answer = exchange(request)
            #expect(answer.hasPrefix("HTTP/1.1 \(expected) "), "\(expected): \(answer.prefix(200))")
            for canary in Self.canaries { #expect(!answer.contains(canary), "\(expected) answer shows \(canary)") }
        }
        // The success path, through the upstream (whose echo, the client's own data, is not the gateway's to hide).
        let success = exchange(
            "GET /open/echo?\(Self.secretQuery) HTTP/1.1\r\nHost: g\r\n\(valid)Connection: close\r\n\r\n")
        #expect(success.hasPrefix("HTTP/1.1 200 "), "\(success.prefix(200))")
        let guarded = exchange("GET /guarded/echo HTTP/1.1\r\nHost: g\r\n\(valid)Connection: close\r\n\r\n")
        #expect(guarded.hasPrefix("HTTP/1.1 200 "), "\(guarded.prefix(200))")
        #expect(gateway.stop() == 0)

        let output = gateway.stdout + gateway.stderr
        #expect(!output.isEmpty)
        for canary in Self.canaries {
            let lines = output.split(separator: "\n").filter { $0.contains(canary) }
            #expect(lines.isEmpty, "\(canary) logged: \(lines.prefix(3))")
        }
        // Every path above has its access-log line, with the secret query values replaced.
        let logged = gateway.accessLog
        #expect(logged.count >= cases.count + 1, "\(logged.count) access-log lines")
        let paths = logged.compactMap { $0["path"] as? String }.filter { $0.contains("token=") }
        #expect(
            !paths.isEmpty && paths.allSatisfy { $0.contains("token=[REDACTED]") && $0.contains("a=1") }, "\(paths)")
        #expect(
            output.contains("\"level\":\"trace\"") || output.contains("\"level\":\"debug\""),
            "the most verbose level was on: \(output.prefix(300))")
    }
}
