import Foundation
import HTTPServerCore
import Testing

@testable import Gateway

/// The keys of issue 40 in the loader: `access_token` of `type: oauth2_client_credentials`, `reload`, the
/// `max_requests_per_connection` limits, CA bundles that must load, and the files a load notes for the watch.
@Suite struct ConfigLoaderOAuth2ReloadLimitsTests {
    @Test func anOAuth2AccessTokenLoadsWithItsDefaults() throws {
        let config = try config(
            """
            upstreams:
              full:
                base_url: https://api.internal
                access_token:
                  type: oauth2_client_credentials
                  token_url: https://auth.example.com/oauth2/token
                  client_id: gateway
                  client_secret: "${CLIENT_SECRET}"
                  scope: "api.read api.write"
                  audience: https://api.internal
                  auth_method: post
                  timeout: 3s
                  default_lifetime: 10m
                  renew_before: 30s
                  tls: { verify: false, ca_file: certs/auth-ca.pem }
              minimal:
                base_url: http://127.0.0.1:9000
                access_token: { type: oauth2_client_credentials, token_url: "http://localhost:9001/token", client_id: c, client_secret: s }
            routes:
              - { name: r, match: { path_prefix: /a }, upstream: full }
            """, env: ["CLIENT_SECRET": "the secret"], files: ["conf/certs/auth-ca.pem": ""])
        let full = try #require(config.upstream(named: "full")?.oauth2)
        #expect(full.tokenURLString == "https://auth.example.com/oauth2/token")
        #expect(full.clientID == "gateway" && full.clientSecret.value == "the secret")
        #expect(full.scope == "api.read api.write" && full.audience == "https://api.internal")
        #expect(full.authMethod == .post && full.timeout == .seconds(3) && full.defaultLifetime == .seconds(600))
        #expect(full.renewBefore == .seconds(30) && !full.tls.verify && full.tls.caFile == "conf/certs/auth-ca.pem")
        #expect(config.upstream(named: "full")?.accessToken == nil)
        let minimal = try #require(config.upstream(named: "minimal")?.oauth2)
        #expect(minimal.tokenURLString == "http://localhost:9001/token")
        #expect(
            minimal.authMethod == .basic && minimal.timeout == .seconds(10) && minimal.defaultLifetime == .seconds(300))
        #expect(minimal.renewBefore == .seconds(60) && minimal.tls.verify && minimal.scope == nil)
        #expect("\(minimal.clientSecret)" == "[REDACTED]")
    }

    @Test func oauth2ProblemsAreReportedWithTheirKeyPaths() {
        let text = """
            upstreams:
              plain: { base_url: "http://x", access_token: { type: oauth2_client_credentials, token_url: "http://auth.example.com/token", client_id: c, client_secret: s } }
              missing: { base_url: "http://x", access_token: { type: oauth2_client_credentials, token_url: "https://a/t" } }
              wrong: { base_url: "http://x", access_token: { type: oauth2_client_credentials, token_url: "ftp://a", client_id: c, client_secret: s, auth_method: digest, token: t } }
              stubbed: { stub: { body: x }, access_token: { type: oauth2_client_credentials, token_url: "https://a/t", client_id: c, client_secret: s } }
              loopback: { base_url: "http://x", access_token: { type: oauth2_client_credentials, token_url: "http://[::1]:9/t", client_id: c, client_secret: "${S}", timeout: 0 } }
            routes: []
            """
        #expect(
            problems(text, env: ["S": "SECRET_VALUE"]) == [
                "conf/gw.yaml:2: upstreams.plain.access_token.token_url: must be https (plain http only to a loopback address: 127.0.0.1, [::1] or localhost), since the client secret and the tokens travel on it",
                "conf/gw.yaml:3: upstreams.missing.access_token.client_id: required key is missing",
                "conf/gw.yaml:3: upstreams.missing.access_token.client_secret: required key is missing",
                "conf/gw.yaml:4: upstreams.wrong.access_token.token: unknown key (expected one of: type, token_url, client_id, client_secret, scope, audience, auth_method, timeout, default_lifetime, renew_before, tls)",
                "conf/gw.yaml:4: upstreams.wrong.access_token.token_url: invalid token_url: unsupported scheme 'ftp' (use http or https)",
                "conf/gw.yaml:4: upstreams.wrong.access_token.auth_method: invalid value 'digest' (basic or post)",
                "conf/gw.yaml:5: upstreams.stubbed.access_token: a stub upstream sends nothing, so it has no token to fetch (use oauth2_client_credentials with base_url)",
                "conf/gw.yaml:6: upstreams.loopback.access_token.timeout: must be greater than 0"
            ])
        #expect(!problems(text, env: ["S": "SECRET_VALUE"]).joined().contains("SECRET_VALUE"))
    }

    @Test func requestsPerConnectionLimits() throws {
        let defaults = try config("upstreams: { a: { base_url: http://x } }\nroutes: []")
        #expect(defaults.server.limits.maxRequestsPerConnection == 1000)
        #expect(defaults.server.limits.server.maxRequestsPerConnection == 1000)
        #expect(defaults.upstream(named: "a")?.pool.maxRequestsPerConnection == 0)
        let set = try config(
            """
            server: { limits: { max_requests_per_connection: 0 } }
            upstreams: { a: { base_url: http://x, pool: { max_requests_per_connection: 100 } } }
            routes: []
            """)
        #expect(set.server.limits.maxRequestsPerConnection == .max, "0: no limit")
        #expect(set.upstream(named: "a")?.pool.maxRequestsPerConnection == 100)
        #expect(
            problems(
                """
                server: { limits: { max_requests_per_connection: -1 } }
                upstreams: { a: { base_url: http://x, pool: { max_requests_per_connection: many } } }
                routes: []
                """) == [
                    "conf/gw.yaml:1: server.limits.max_requests_per_connection: must be between 0 and 1000000000",
                    "conf/gw.yaml:2: upstreams.a.pool.max_requests_per_connection: expected an integer, got 'many'"
                ])
    }

    @Test func theReloadSection() throws {
        #expect(try config("upstreams: { a: { base_url: http://x } }\nroutes: []").reload == ReloadConfig())
        let set = try config(
            "reload: { watch: true, debounce: 2s }\nupstreams: { a: { base_url: http://x } }\nroutes: []")
        #expect(set.reload == ReloadConfig(watch: true, debounce: .seconds(2)))
        #expect(
            problems(
                "reload: { watch: maybe, debounce: 2m, poll: 1s }\nupstreams: { a: { base_url: http://x } }\nroutes: []"
            ) == [
                "conf/gw.yaml:1: reload.poll: unknown key (expected one of: watch, debounce)",
                "conf/gw.yaml:1: reload.watch: expected true or false, got 'maybe'",
                "conf/gw.yaml:1: reload.debounce: must be at most 1m"
            ])
    }

    @Test func aCABundleMustHoldACertificate() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ca-check-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "not a certificate\n".write(toFile: "\(directory)/ca.pem", atomically: true, encoding: .utf8)
        let text = """
            upstreams:
              a: { base_url: "https://x", tls: { ca_file: ca.pem } }
              b:
                base_url: http://x
                access_token: { type: oauth2_client_credentials, token_url: "https://a/t", client_id: c, client_secret: s, tls: { ca_file: ca.pem } }
            routes: []
            """
        guard
            case .failure(let errors) = ConfigLoader().load(path: "\(directory)/gw.yaml", text: text, environment: [:])
        else {
            Issue.record("a CA file without a certificate loaded")
            return
        }
        let lines = errors.problems.map(\.description)
        #expect(lines.count == 2)
        #expect(
            lines.first?.hasPrefix("\(directory)/gw.yaml:2: upstreams.a.tls.ca_file: CA file \(directory)/ca.pem")
                == true, "\(lines)")
        #expect(
            lines.last?.hasPrefix("\(directory)/gw.yaml:5: upstreams.b.access_token.tls.ca_file: CA file") == true,
            "\(lines)")
    }

    @Test func aLoadNotesTheFilesItReadsButNotTheLogFile() throws {
        let files = ReferencedFiles()
        let loader = memoryLoader([
            "conf/gw.yaml": """
            server: { tls: { listen: ["127.0.0.1:8443"], certificate: tls/cert.pem, private_key: tls/key.pem } }
            logging: { output: logs/gw.log }
            upstreams:
              a: { base_url: "https://x", tls: { ca_file: ca.pem }, access_token: { token: "${file:secrets/token}" } }
              s: { stub: { body_file: stubs/body.json } }
            routes: []
            """,
            "conf/tls/cert.pem": "", "conf/tls/key.pem": "", "conf/ca.pem": "", "conf/secrets/token": "t",
            "conf/stubs/body.json": "{}"
        ]).recording(into: files)
        guard case .success = loader.load(path: "conf/gw.yaml", environment: [:]) else {
            Issue.record("did not load")
            return
        }
        #expect(
            files.all == [
                "conf/gw.yaml", "conf/tls/cert.pem", "conf/tls/key.pem", "conf/ca.pem",
                "conf/secrets/token", "conf/stubs/body.json"
            ])
    }

    @Test func theRoutesTableShowsAnUpstreamsRequestLimitAndOAuth2() throws {
        let config = try config(
            """
            upstreams:
              a:
                base_url: http://x
                pool: { max_requests_per_connection: 50 }
                access_token: { type: oauth2_client_credentials, token_url: "https://a/t", client_id: c, client_secret: s }
            routes:
              - { name: r, match: { path_prefix: /a }, upstream: a }
            """)
        let flags = RouteTableFormatter.rows(RouteTable(config: config)).first?.last ?? ""
        #expect(flags == "upstream_requests_per_connection 50 oauth2")
    }
}
