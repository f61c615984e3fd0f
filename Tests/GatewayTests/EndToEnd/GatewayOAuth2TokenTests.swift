import Foundation
import HTTPClientCore
import HTTPWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `access_token: { type: oauth2_client_credentials }` through the real `moya-gateway` binary, against a Python token
/// endpoint that issues short-lived tokens and counts its fetches (`faults/token_endpoint.py`, which also serves the
/// protected API): the first token on first use, one fetch for 100 requests that meet an expired token, one retry
/// after a revoked token, 502 `upstream_auth_failed` during an outage and recovery after it, a reload that keeps or
/// replaces the token, and no secret or token in any log line or response.
@Suite(.serialized) struct GatewayOAuth2TokenTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/token_endpoint.py").path
    static let clientSecret = "SECRET_CANARY one/+:"
    static let otherSecret = "SECRET_CANARY two"
    static let scope = "api.read api.write"

    /// The Python token endpoint and API.
    final class TokenEndpoint {
        let process = Process()
        let port: Int
        let client = HTTPClient()

        init(lifetime: Double) async throws {
            port = try freeLoopbackPort()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c",
                "exec /usr/bin/python3 \"$0\" --port \"$1\" --client-id gateway --client-secret \"$2\" "
                    + "--client-secret \"$3\" --scope \"$4\" --lifetime \"$5\" >/dev/null 2>&1",
                GatewayOAuth2TokenTests.script, String(port), GatewayOAuth2TokenTests.clientSecret,
                GatewayOAuth2TokenTests.otherSecret, GatewayOAuth2TokenTests.scope, String(lifetime)
            ]
            try ChildProcess.launch(process)
            for _ in 0..<100 {
                if (try? await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/stats")))?.status == 200
                {
                    return
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw GatewayTestError("the token endpoint did not start")
        }

        deinit { ProcessRunner.stop(process) }

        func stats() async throws -> [String: Int] {
            let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/stats"))
            return (try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Int]) ?? [:]
        }

        func post(_ path: String, _ json: String = "{}") async throws {
            _ = try await client.execute(
                HTTPClientRequest(
                    method: .post, url: "http://127.0.0.1:\(port)\(path)",
                    headers: ["Content-Type": "application/json"],
                    body: .bytes(Array(json.utf8))))
        }
    }

    static func config(endpoint: Int, level: String = "trace") -> String {
        """
        \(GatewayProcess.listeners)
        logging: { level: \(level) }
        upstreams:
          api:
            base_url: http://127.0.0.1:\(endpoint)
            access_token:
              type: oauth2_client_credentials
              token_url: http://127.0.0.1:\(endpoint)/oauth/token
              client_id: gateway
              client_secret: "${file:secrets/client-secret}"
              scope: "\(scope)"
              timeout: 2s
        routes:
          - { name: api, match: { path_prefix: /api }, upstream: api }
        """
    }

    static func metric(_ gateway: GatewayProcess, _ name: String) async throws -> Double {
        let response = try await HTTPClient().execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics"))
        let line = String(decoding: response.body, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name) }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Output and responses must hold neither secret nor any issued token.
    static func expectNoSecrets(in text: String, _ what: String) {
        for canary in ["SECRET_CANARY", "TOKEN_CANARY"] {
            let lines = text.split(separator: "\n").filter { $0.contains(canary) }
            #expect(lines.isEmpty, "\(what) shows \(canary): \(lines.prefix(3))")
        }
    }

    @Test func oneFetchServesEveryRequestAndARevokedTokenIsReplacedOnce() async throws {
        let endpoint = try await TokenEndpoint(lifetime: 2)
        let gateway = try await GatewayProcess(
            config: Self.config(endpoint: endpoint.port),
            files: ["secrets/client-secret": Self.clientSecret + "\n"])
        // Ready without a token: the endpoint is contacted on first use only, and `check` never contacts it.
        let check = try CheckCommandTests.run(["check", "--config", gateway.configPath])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(try await endpoint.stats()["fetches"] == 0)

        let client = HTTPClient()
        var bodies = ""
        let first = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/first"))
        #expect(first.status == 200)
        #expect(try await endpoint.stats()["fetches"] == 1)

        // The token expires (2 s) with no request in its renewal window: 100 requests at once then share one fetch,
        // answered slowly so that every request is waiting for it (and valid long enough for all of them).
        try await Task.sleep(for: .milliseconds(2300))
        try await endpoint.post("/control", #"{"delay": 0.5, "lifetime": 60}"#)
        let base = gateway.url
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<100 {
                group.addTask {
                    (try? await client.execute(HTTPClientRequest(url: "\(base)/api/burst/\(index)")))?.status ?? -1
                }
            }
            var statuses: [Int] = []
            for await status in group { statuses.append(status) }
            return statuses
        }
        #expect(
            statuses == Array(repeating: 200, count: 100),
            "\(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count))")
        var stats = try await endpoint.stats()
        #expect(stats["fetches"] == 2, "one fetch for the 100 requests: \(stats)")
        #expect(stats["inflight_max"] == 1, "never two fetches at once: \(stats)")
        #expect(stats["refused"] == 0, "no request was sent without a valid token: \(stats)")
        try await endpoint.post("/control", #"{"delay": 0}"#)

        // A revoked token: the upstream's 401, one new token, the request sent once more.
        let apiBefore = stats["api"] ?? 0
        try await endpoint.post("/revoke")
        let revoked = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/after-revoke"))
        bodies += String(decoding: revoked.body, as: UTF8.self)
        #expect(revoked.status == 200)
        stats = try await endpoint.stats()
        #expect(stats["fetches"] == 3 && stats["refused"] == 1 && stats["api"] == apiBefore + 2, "\(stats)")
        #expect(
            try await Self.metric(
                gateway, "moya_gateway_upstream_token_fetches_total{upstream=\"api\",result=\"success\"}") == 3)

        #expect(gateway.stop() == 0)
        #expect(gateway.stdout.contains("the upstream refused its access token (401); fetching a new one"))
        #expect(gateway.stdout.contains("\"msg\":\"access token fetched\""))
        Self.expectNoSecrets(in: gateway.stdout + gateway.stderr + bodies, "the gateway")
    }

    @Test func anOutageAnswers502AndTheGatewayRecoversByItself() async throws {
        let endpoint = try await TokenEndpoint(lifetime: 60)
        let gateway = try await GatewayProcess(
            config: Self.config(endpoint: endpoint.port),
            files: ["secrets/client-secret": Self.clientSecret])
        let client = HTTPClient()
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/ok")).status == 200)

        // The endpoint fails and the token is revoked: the retry after the 401 finds no token to be had.
        try await endpoint.post("/control", #"{"mode": "fail"}"#)
        try await endpoint.post("/revoke")
        var bodies = ""
        for index in 0..<3 {
            let failed = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/outage/\(index)"))
            let body = String(decoding: failed.body, as: UTF8.self)
            bodies += body
            #expect(failed.status == 502)
            #expect(body.hasPrefix("{\"error\":\"upstream_auth_failed\""), "\(body)")
        }
        let fetchesDuringOutage = try await endpoint.stats()["fetches"] ?? 0
        #expect(
            fetchesDuringOutage >= 4 && fetchesDuringOutage <= 7,
            "bounded retries (3 per round), rounds paused after a failure: \(fetchesDuringOutage)")

        // Garbage is a failure too; then the endpoint comes back and the gateway recovers with no signal.
        try await endpoint.post("/control", #"{"mode": "garbage"}"#)
        try await Task.sleep(for: .milliseconds(1200))
        let garbage = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/garbage"))
        #expect(garbage.status == 502)
        try await endpoint.post("/control", #"{"mode": "ok"}"#)
        var recovered = false
        for _ in 0..<60 {
            let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/recovery"))
            bodies += String(decoding: response.body, as: UTF8.self)
            if response.status == 200 {
                recovered = true
                break
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(recovered, "the gateway fetched a token again once the endpoint answered")
        #expect(
            try await Self.metric(
                gateway, "moya_gateway_upstream_token_fetches_total{upstream=\"api\",result=\"failure\"}") >= 4)
        #expect(
            try await Self.metric(
                gateway, "moya_gateway_upstream_errors_total{upstream=\"api\",error=\"upstream_auth_failed\"}") >= 3)

        #expect(gateway.stop() == 0)
        let lines = gateway.stdout.split(separator: "\n")
        let failures = lines.filter { $0.contains("access token fetch failed") }
        #expect(
            failures.contains { $0.contains("token endpoint answered 503 (temporarily_unavailable)") },
            "\(failures.prefix(2))")
        #expect(failures.contains { $0.contains("the token endpoint's answer is not a JSON object") })
        #expect(lines.contains { $0.contains("the token endpoint recovered") })
        let logged = gateway.accessLog.compactMap { $0["upstream_error"] as? String }
        #expect(logged.contains { $0.hasPrefix("no access token: token endpoint answered 503") }, "\(logged)")
        Self.expectNoSecrets(in: gateway.stdout + gateway.stderr + bodies, "the gateway")
    }

    @Test func aReloadKeepsAnUnchangedTokenAndANewSecretStartsAnew() async throws {
        let endpoint = try await TokenEndpoint(lifetime: 60)
        let gateway = try await GatewayProcess(
            config: Self.config(endpoint: endpoint.port, level: "info"),
            files: ["secrets/client-secret": Self.clientSecret])
        let client = HTTPClient()
        func reloads() -> Int { gateway.stdout.components(separatedBy: "\"msg\":\"reloaded\"").count - 1 }
        func reload() async throws {
            let before = reloads()
            gateway.signal(SIGHUP)
            for _ in 0..<100 where reloads() == before { try await Task.sleep(for: .milliseconds(20)) }
            #expect(reloads() == before + 1)
        }
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/a")).status == 200)
        try await reload()
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/b")).status == 200)
        var stats = try await endpoint.stats()
        #expect(stats["fetches"] == 1, "an unchanged source keeps its token across the reload: \(stats)")

        // The secret file rotated: the reload starts a new source, whose first request fetches with the new secret.
        try Self.otherSecret.write(
            toFile: "\(gateway.directory)/secrets/client-secret", atomically: true, encoding: .utf8)
        try await reload()
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/c")).status == 200)
        stats = try await endpoint.stats()
        #expect(stats["fetches"] == 2 && stats["secret"] == 1, "\(stats)")
        #expect(gateway.stop() == 0)
        Self.expectNoSecrets(in: gateway.stdout + gateway.stderr, "the gateway")
    }
}
