import Foundation
import HTTPClientCore
import HTTPWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Upstream keys of docs/configuration.md driven through the real `moya-gateway` binary against a recording upstream:
/// every `access_token` type, static `headers`, each `validation`, `timeout.connect`, and a stub's `body_file`.
@Suite(.serialized) struct GatewayUpstreamSettingsTests {
    static func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    /// `access_token` of each type reaches the upstream as `Authorization` in its own scheme (bearer is covered
    /// throughout the other suites; basic and custom here), replaces the client's, and is in no log line or response.
    @Test func everyAccessTokenTypeIsInjectedInItsScheme() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                logging: { level: debug }
                upstreams:
                  basic:
                    base_url: http://127.0.0.1:\(upstream.port)
                    access_token: { type: basic, token: "${BASIC_TOKEN}" }
                  custom:
                    base_url: http://127.0.0.1:\(upstream.port)
                    access_token: { type: custom, scheme: Token, token: "${CUSTOM_TOKEN}" }
                routes:
                  - { name: basic, match: { path_prefix: /basic }, upstream: basic }
                  - { name: custom, match: { path_prefix: /custom }, upstream: custom }
                """, environment: ["BASIC_TOKEN": "c3ZjOkJBU0lDX0NBTkFSWQ==", "CUSTOM_TOKEN": "CUSTOM_CANARY_9"])
        let client = HTTPClient()
        for (path, expected) in [("/basic/a", "Basic c3ZjOkJBU0lDX0NBTkFSWQ=="), ("/custom/b", "Token CUSTOM_CANARY_9")]
        {
            let response = try await client.execute(
                HTTPClientRequest(
                    url: "\(gateway.url)\(path)",
                    headers: ["Authorization": "Bearer CLIENT_OWN"]))
            #expect(response.status == 200)
            let received = try #require(upstream.requests.last)
            #expect(received.head.target == path)
            #expect(
                received.head.headers["Authorization"] == [expected], "\(path): the client's is replaced, never both")
            #expect(!response.headers.contains { $0.value.contains("CANARY") || $0.value.contains("c3ZjOkJBU0lD") })
        }
        gateway.stop()
        let logs = gateway.stdout + gateway.stderr
        #expect(
            logs.contains("upstream exchange") && logs.contains("Request Headers: "),
            "debug level logs the exchanges, redacted")
        for secret in ["c3ZjOkJBU0lDX0NBTkFSWQ", "CUSTOM_CANARY", "CLIENT_OWN"] {
            #expect(!logs.contains(secret), "\(secret) leaked into the logs")
        }
    }

    /// An upstream's static `headers` go on every proxied request, replacing a client field of the same name (any
    /// case), and lose to the gateway's own forwarding headers.
    @Test func staticHeadersReplaceTheClientsAndLoseToForwardingHeaders() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  api:
                    base_url: http://127.0.0.1:\(upstream.port)
                    headers: { X-From: moya-gateway, X-Tenant: blue, X-Request-Id: configured }
                routes:
                  - { name: api, match: { path_prefix: /api }, upstream: api }
                """)
        let response = try await HTTPClient().execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/x", headers: ["x-from": "evil", "X-Request-Id": "client-7", "X-Other": "kept"])
        )
        #expect(response.status == 200)
        let received = try #require(upstream.requests.last).head.headers
        #expect(received["X-From"] == ["moya-gateway"], "\(received)")
        #expect(received["X-Tenant"] == ["blue"])
        #expect(received["X-Request-Id"] == ["client-7"], "the gateway's request id wins over a configured one")
        #expect(received["X-Other"] == ["kept"])
        gateway.stop()
    }

    /// `validation` applies Moya's `ValidationType` to the upstream's status: `none` passes every status through,
    /// `success` turns a non-2xx into 502 `bad_gateway` (logged as a failed validation), `success_and_redirect`
    /// passes 3xx too.
    @Test func validationDecidesWhichStatusesPassThrough() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  none: { base_url: "http://127.0.0.1:\(upstream.port)", validation: none }
                  success: { base_url: "http://127.0.0.1:\(upstream.port)", validation: success }
                  redirects: { base_url: "http://127.0.0.1:\(upstream.port)", validation: success_and_redirect }
                routes:
                  - { name: none, match: { path_prefix: /none }, upstream: none, rewrite: { strip_prefix: /none } }
                  - { name: success, match: { path_prefix: /success }, upstream: success, rewrite: { strip_prefix: /success } }
                  - { name: redirects, match: { path_prefix: /redirects }, upstream: redirects, rewrite: { strip_prefix: /redirects } }
                """)
        let client = HTTPClient()
        let expectations: [(String, Int)] = [
            ("/none/status/500", 500), ("/none/status/302", 302), ("/none/status/201", 201),
            ("/success/status/201", 201), ("/success/status/302", 502), ("/success/status/404", 502),
            ("/redirects/status/302", 302), ("/redirects/status/404", 502), ("/redirects/status/200", 200)
        ]
        for (path, status) in expectations {
            let response = try await client.execute(
                HTTPClientRequest(
                    url: "\(gateway.url)\(path)",
                    headers: ["X-Request-Id": "v\(path)"]))
            #expect(response.status == status, "\(path)")
            if status == 502 {
                #expect(Self.text(response) == #"{"error":"bad_gateway","request_id":"v\#(path)"}"#, "\(path)")
            } else {
                #expect(Self.text(response) == "status \(status)", "\(path): the upstream's own body")
            }
        }
        #expect(upstream.requests.count == expectations.count, "every call reached the upstream once")
        let failed = await gateway.accessLog(atLeast: expectations.count).filter { $0["status"] as? Int == 502 }
        #expect(
            Set(failed.compactMap { $0["upstream_error"] as? String })
                == ["status 302 failed validation", "status 404 failed validation"], "\(failed)")
        gateway.stop()
    }

    /// `timeout.connect`: an upstream address that never completes the TCP handshake is given up after the connect
    /// timeout and answered 504 `gateway_timeout`, well before the response timeout.
    @Test func aConnectThatNeverCompletesIsA504AfterTheConnectTimeout() async throws {
        let unanswered = try UnansweredListener()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  hanging:
                    base_url: http://127.0.0.1:\(unanswered.port)
                    timeout: { connect: 300ms, response: 20s }
                routes:
                  - { name: hanging, match: { path: /hang }, upstream: hanging }
                """)
        let started = ContinuousClock.now
        let response = try await HTTPClient().execute(
            HTTPClientRequest(
                url: "\(gateway.url)/hang",
                headers: ["X-Request-Id": "hang-1"]))
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 504)
        #expect(Self.text(response) == #"{"error":"gateway_timeout","request_id":"hang-1"}"#)
        #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(10), "\(elapsed)")
        let line = try #require(await gateway.accessLog(atLeast: 1).first)
        #expect(line["upstream_error"] as? String == "connect timed out")
        gateway.stop()
    }

    /// A stub's `body_file` (relative to the config file's directory) is served byte for byte, with the stub's
    /// status and headers, and read again by a reload.
    @Test func aStubServesItsBodyFile() async throws {
        let body = "{\"items\": [\"a\", \"b\"], \"note\": \"from a file\"}\n"
        let config = """
            \(GatewayProcess.listeners)
            upstreams:
              catalog:
                stub: { status: 203, headers: { Content-Type: application/json }, body_file: stubs/catalog.json }
            routes:
              - { name: catalog, match: { path: /catalog }, upstream: catalog }
            """
        let gateway = try await GatewayProcess(config: config, files: ["stubs/catalog.json": body])
        let client = HTTPClient()
        let first = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/catalog"))
        #expect(first.status == 203)
        #expect(first.headers.first(name: "Content-Type") == "application/json")
        #expect(Self.text(first) == body)

        try "{\"reloaded\": true}".write(
            toFile: "\(gateway.directory)/stubs/catalog.json", atomically: true, encoding: .utf8)
        gateway.signal(SIGHUP)
        var reloaded = ""
        for _ in 0..<100 where reloaded != "{\"reloaded\": true}" {
            try await Task.sleep(for: .milliseconds(30))
            reloaded = Self.text(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/catalog")))
        }
        #expect(reloaded == "{\"reloaded\": true}")
        gateway.stop()
    }
}
