import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct ConfigLoaderTests {
    static let minimal = """
        upstreams:
          a:
            base_url: http://127.0.0.1:18080/v1
        routes:
          - name: r
            match: { path_prefix: /api }
            upstream: a
        """

    @Test func minimalFileGetsEveryDefault() throws {
        let config = try config(Self.minimal)
        #expect(config.server.listen == [ListenAddress(host: "127.0.0.1", port: 8080)])
        #expect(config.server.threads == 0)
        #expect(config.server.http2)
        #expect(config.server.ioUring)
        #expect(config.server.tls == nil)
        #expect(config.server.compression.gzip && config.server.compression.minBytes == 1024)
        let limits = config.server.limits
        #expect(limits.maxHeaderBytes == 16384)
        #expect(limits.maxHeaders == 100)
        #expect(limits.maxBodyBytes == 10 * 1024 * 1024)
        #expect(limits.headerTimeout == .seconds(10))
        #expect(limits.bodyTimeout == .seconds(30))
        #expect(limits.idleTimeout == .seconds(60))
        #expect(limits.sendTimeout == .seconds(60))
        #expect(limits.maxConnections == 10000)
        #expect(limits.drainTimeout == .seconds(30))
        #expect(config.admin.listen.description == "127.0.0.1:9090")
        #expect(config.logging.level == .info)
        #expect(config.logging.format == .json)
        #expect(config.logging.accessLog)
        #expect(config.logging.output == .stdout)
        #expect(
            config.logging.redactHeaders == [
                "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"
            ])
        let upstream = try #require(config.upstream(named: "a"))
        #expect(upstream.baseURL == UpstreamURL(scheme: "http", host: "127.0.0.1", port: 18080, basePath: "/v1"))
        #expect(upstream.tls.verify)
        #expect(upstream.pool.http2 == .auto)
        #expect(upstream.validation == .none)
        #expect(config.routes.count == 1)
        #expect(config.routes[0].match.pathPrefix == "/api")
        #expect(config.routes[0].match.methods == nil)
        #expect(!config.routes[0].coalesce)
    }

    @Test func fullSketchLoads() throws {
        let text = """
            server:
              listen: ["127.0.0.1:8080", "[::1]:8081"]
              threads: 4
              http2: false
              io_uring: false
              tls:
                listen: ["127.0.0.1:8443"]
                certificate: certs/server.pem
                private_key: certs/server.key
              compression: { gzip: false, min_bytes: 2KiB }
              limits:
                max_header_bytes: 32KiB
                max_headers: 50
                max_body_bytes: 1MiB
                header_timeout: 500ms
                body_timeout: 1m
                idle_timeout: 2s
                send_timeout: 7s
                max_connections: 5
                drain_timeout: 1.5s
            admin:
              listen: "[::1]:9999"
            logging:
              level: debug
              format: text
              access_log: false
              output: logs/gw.log
              redact_headers: [X-Secret]
            clients:
              api_keys:
                header: X-Key
                keys: { billing-service: "${BILLING_KEY}", web: "${WEB_KEY}" }
            upstreams:
              users:
                base_url: http://127.0.0.1:18080/v1
                headers: { X-From: moya-gateway }
                timeout: { connect: 1s, response: 5s }
                pool: { max_connections: 64, http2: always, max_wait: 2s, idle_timeout: 4s, max_waiting: 0 }
                tls: { verify: false, ca_file: certs/ca.pem }
                access_token: { type: custom, scheme: Token, token: "${USERS_TOKEN}" }
                validation: success_and_redirect
              billing:
                base_url: https://billing.internal
                credentials: { user: svc, password: "${BILLING_PASSWORD}", preemptive: true }
              catalog-stub:
                stub:
                  status: 201
                  headers: { Content-Type: application/json }
                  body_file: stubs/catalog.json
                  delay: 50ms
                  error_rate: 0.25
                  error_status: 503
            routes:
              - name: users
                match: { path_prefix: /api/users, methods: [GET, HEAD], host: API.example.com }
                upstream: users
                rewrite: { strip_prefix: /api, add_prefix: /v2 }
                coalesce: true
                coalesce_vary: [Accept, Accept-Encoding]
                clients: [billing-service]
                timeout: 3s
                retries: { attempts: 2, statuses: [502, 503], backoff: 100ms }
              - name: catalog
                match: { path_prefix: /api/catalog }
                upstream: catalog-stub
            """
        let env = ["BILLING_KEY": "bk", "WEB_KEY": "wk", "USERS_TOKEN": "ut", "BILLING_PASSWORD": "bp"]
        let files = [
            "conf/certs/server.pem": "c", "conf/certs/server.key": "k", "conf/certs/ca.pem": "ca",
            "conf/stubs/catalog.json": "{\"items\":[]}"
        ]
        let config = try config(text, env: env, files: files)
        #expect(config.server.listen.map(\.description) == ["127.0.0.1:8080", "[::1]:8081"])
        #expect(config.server.threads == 4 && !config.server.http2 && !config.server.ioUring)
        #expect(
            config.server.tls
                == ServerTLSConfig(
                    listen: [ListenAddress(host: "127.0.0.1", port: 8443)],
                    certificate: "conf/certs/server.pem",
                    privateKey: "conf/certs/server.key"))
        #expect(config.server.compression.minBytes == 2048 && !config.server.compression.gzip)
        #expect(config.server.limits.maxHeaderBytes == 32768)
        #expect(config.server.limits.maxBodyBytes == 1 << 20)
        #expect(config.server.limits.headerTimeout == .milliseconds(500))
        #expect(config.server.limits.bodyTimeout == .seconds(60))
        #expect(config.server.limits.drainTimeout == .milliseconds(1500))
        #expect(config.server.limits.server.sendTimeout == .seconds(7))
        #expect(config.server.limits.server.maxConnections == 5)
        #expect(config.admin.listen == ListenAddress(host: "::1", port: 9999))
        #expect(config.logging.level == .debug && config.logging.format == .text && !config.logging.accessLog)
        #expect(config.logging.output == .file("conf/logs/gw.log"))
        #expect(config.clients?.apiKeys?.header == "X-Key")
        #expect(config.clients?.apiKeys?.keys.map(\.name) == ["billing-service", "web"])
        #expect(config.clients?.apiKeys?.client(forKey: "wk")?.name == "web")
        #expect(config.clients?.apiKeys?.client(forKey: "nope") == nil)
        let users = try #require(config.upstream(named: "users"))
        #expect(users.headers.first(name: "x-from") == "moya-gateway")
        #expect(users.timeout.connect == .seconds(1) && users.timeout.response == .seconds(5))
        #expect(users.pool.maxConnections == 64 && users.pool.http2 == .always && users.pool.maxWait == .seconds(2))
        #expect(users.pool.idleTimeout == .seconds(4) && users.pool.maxWaiting == 0)
        #expect(!users.tls.verify && users.tls.caFile == "conf/certs/ca.pem")
        #expect(users.accessToken?.authorizationValue == "Token ut")
        #expect(users.validation == .successAndRedirect)
        let billing = try #require(config.upstream(named: "billing"))
        #expect(billing.baseURL?.port == 443 && billing.baseURL?.basePath == "")
        #expect(billing.credentials?.user == "svc" && billing.credentials?.password.value == "bp")
        #expect(billing.credentials?.preemptive == true)
        let stub = try #require(config.upstream(named: "catalog-stub")?.stub)
        #expect(stub.status == 201 && stub.body == Array("{\"items\":[]}".utf8))
        #expect(stub.bodyFile == "conf/stubs/catalog.json")
        #expect(stub.delay == .milliseconds(50) && stub.errorRate == 0.25 && stub.errorStatus == 503)
        let route = config.routes[0]
        #expect(route.match.methods == [.get, .head] && route.match.host == "api.example.com")
        #expect(route.rewrite == RouteConfig.Rewrite(stripPrefix: "/api", addPrefix: "/v2"))
        #expect(route.coalesce && route.coalesceVary == ["Accept", "Accept-Encoding"])
        #expect(route.clients == ["billing-service"] && route.timeout == .seconds(3))
        #expect(route.retries == RouteConfig.Retries(attempts: 2, statuses: [502, 503], backoff: .milliseconds(100)))
        // Secrets never print.
        #expect(!"\(users.accessToken!)".contains("ut"))
        #expect(!"\(billing.credentials!)".contains("bp"))
    }

    @Test func unknownKeysWrongTypesAndMissingKeysAreAllReported() {
        let text = """
            server:
              listen: ["127.0.0.1:8080"]
              threds: 4
              http2: maybe
              limits:
                max_body_bytes: 0
                header_timeout: 0s
                idle_timeout: 10
            upstreams:
              a:
                base_url: ftp://x
            routes:
              - name: r
                match: { path_prefix: /api }
                upstream: b
              - match: { path: /x }
                upstream: a
                timeout: -1s
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:3: server.threds: unknown key (expected one of: listen, threads, http2, io_uring, tls, compression, limits, trusted_proxies, buffering)",
                "conf/gw.yaml:4: server.http2: expected true or false, got 'maybe'",
                "conf/gw.yaml:6: server.limits.max_body_bytes: must be greater than 0",
                "conf/gw.yaml:7: server.limits.header_timeout: must be greater than 0",
                "conf/gw.yaml:8: server.limits.idle_timeout: invalid duration '10' (use a number with ms, s or m, e.g. 250ms, 10s, 2m)",
                "conf/gw.yaml:11: upstreams.a.base_url: invalid base_url: unsupported scheme 'ftp' (use http or https)",
                "conf/gw.yaml:15: routes[0].upstream: unknown upstream 'b' (not defined under upstreams)",
                "conf/gw.yaml:16: routes[1].name: required key is missing",
                "conf/gw.yaml:18: routes[1].timeout: invalid duration '-1s' (use a number with ms, s or m, e.g. 250ms, 10s, 2m)"
            ])
    }

    /// One line per problem, whatever the file holds: a quoted key or value with a newline, a tab or another control
    /// character is escaped, and a long value is cut short.
    @Test func problemsStayOnOneLine() {
        let long = String(repeating: "x", count: 200)
        let text = """
            logging:
              level: "de\\nbug\\tx\\u0001"
              "form\\nat": json
              output: stdout
              redact_headers: ["bad name \(long)"]
            upstreams:
              a: { base_url: "http://127.0.0.1:18080" }
            routes:
              - { name: r, match: { path: /x }, upstream: a }
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:2: logging.level: invalid level 'de\\nbug\\tx\\u{1}' (trace, debug, info, notice, warning, error or critical)",
                "conf/gw.yaml:3: logging.form\\nat: unknown key (expected one of: level, format, access_log, output, redact_headers)",
                "conf/gw.yaml:5: logging.redact_headers[0]: invalid header name 'bad name \(String(repeating: "x", count: 71))…'"
            ])
    }

    @Test func circuitBreakerSettings() throws {
        let loaded = try config(
            """
            upstreams:
              users: { base_url: "http://127.0.0.1:1", circuit_breaker: { failures: 3, open_for: 2s } }
              plain: { base_url: "http://127.0.0.1:1", circuit_breaker: {} }
              none: { base_url: "http://127.0.0.1:1" }
            routes:
              - { name: r, match: { path: /x }, upstream: users }
            """)
        #expect(loaded.upstream(named: "users")?.circuitBreaker?.failures == 3)
        #expect(loaded.upstream(named: "users")?.circuitBreaker?.openFor == .seconds(2))
        #expect(loaded.upstream(named: "plain")?.circuitBreaker == CircuitBreakerConfig())
        #expect(loaded.upstream(named: "none")?.circuitBreaker == nil)
        #expect(
            problems(
                """
                upstreams:
                  a: { base_url: "http://127.0.0.1:1", circuit_breaker: { failures: 0, open_for: 0s, after: 1 } }
                  s: { stub: { status: 200 }, circuit_breaker: { failures: 2 } }
                routes:
                  - { name: r, match: { path: /x }, upstream: a }
                """) == [
                    "conf/gw.yaml:2: upstreams.a.circuit_breaker.after: unknown key (expected one of: failures, open_for)",
                    "conf/gw.yaml:2: upstreams.a.circuit_breaker.failures: must be between 1 and 1000000",
                    "conf/gw.yaml:2: upstreams.a.circuit_breaker.open_for: must be greater than 0"
                ], "a stub's circuit counts its faults with mode: upstream (issue 39), so a stub may have one")
        let stubbed = try config(
            """
            upstreams:
              s: { stub: { status: 200 }, circuit_breaker: { failures: 2 } }
            routes:
              - { name: r, match: { path: /x }, upstream: s }
            """)
        #expect(stubbed.upstream(named: "s")?.circuitBreaker?.failures == 2)
    }

    @Test func healthCheckSettings() throws {
        let loaded = try config(
            """
            upstreams:
              full:
                base_url: "http://127.0.0.1:1"
                health_check: { path: "/healthz?deep=1", interval: 2s, timeout: 300ms, unhealthy_after: 3, healthy_after: 1,
                                headers: { X-Health-Key: k } }
              plain: { base_url: "http://127.0.0.1:1", health_check: { path: /ping } }
            routes:
              - { name: r, match: { path: /x }, upstream: full }
            """)
        var full = HealthCheckConfig(path: "/healthz?deep=1")
        full.interval = .seconds(2)
        full.timeout = .milliseconds(300)
        full.unhealthyAfter = 3
        full.healthyAfter = 1
        full.headers = ["X-Health-Key": "k"]
        #expect(loaded.upstream(named: "full")?.healthCheck == full)
        #expect(loaded.upstream(named: "plain")?.healthCheck == HealthCheckConfig(path: "/ping"))
        #expect(
            problems(
                """
                upstreams:
                  a: { base_url: "http://127.0.0.1:1", health_check: { path: healthz, interval: 0s, unhealthy_after: 0, every: 1, headers: { "bad name": x } } }
                  b: { base_url: "http://127.0.0.1:1", health_check: { timeout: 1s } }
                  s: { stub: { status: 200 }, health_check: { path: /healthz } }
                routes:
                  - { name: r, match: { path: /x }, upstream: a }
                """) == [
                    "conf/gw.yaml:2: upstreams.a.health_check.every: unknown key (expected one of: path, interval, timeout, unhealthy_after, healthy_after, headers)",
                    "conf/gw.yaml:2: upstreams.a.health_check.path: must be an origin-form path starting with '/' (e.g. /healthz)",
                    "conf/gw.yaml:2: upstreams.a.health_check.interval: must be greater than 0",
                    "conf/gw.yaml:2: upstreams.a.health_check.unhealthy_after: must be between 1 and 100",
                    "conf/gw.yaml:2: upstreams.a.health_check.headers.bad name: invalid header name",
                    "conf/gw.yaml:3: upstreams.b.health_check.path: required key is missing",
                    "conf/gw.yaml:4: upstreams.s.health_check: a stub upstream has no servers to check (use it with base_url)"
                ])
    }

    @Test func upstreamServers() throws {
        let loaded = try config(
            """
            upstreams:
              users:
                base_url: "http://users.internal:8080/v1"
                servers: ["10.0.0.1:8080", "[::1]:9000", "localhost:81", "Users-2.Internal:8080", "api_3.svc:80"]
              one: { base_url: "http://127.0.0.1:1", servers: "10.0.0.2:80" }
              none: { base_url: "http://127.0.0.1:1" }
            routes:
              - { name: r, match: { path: /x }, upstream: users }
            """)
        #expect(
            loaded.upstream(named: "users")?.servers == [
                UpstreamServer(host: "10.0.0.1", port: 8080),
                UpstreamServer(host: "::1", port: 9000),
                UpstreamServer(host: "localhost", port: 81),
                UpstreamServer(host: "users-2.internal", port: 8080),
                UpstreamServer(host: "api_3.svc", port: 80)
            ])
        #expect(
            loaded.upstream(named: "users")?.servers?.map(\.description)
                == ["10.0.0.1:8080", "[::1]:9000", "localhost:81", "users-2.internal:8080", "api_3.svc:80"])
        #expect(loaded.upstream(named: "one")?.servers == [UpstreamServer(host: "10.0.0.2", port: 80)])
        #expect(loaded.upstream(named: "none")?.servers == nil)
        let long = String(repeating: "a", count: 64)
        #expect(
            problems(
                """
                upstreams:
                  a: { base_url: "http://127.0.0.1:1", servers: ["users.internal", "10.0.0.1:0", "10.0.0.1", "a..b:80"] }
                  c: { base_url: "http://127.0.0.1:1", servers: ["-a.internal:80", "\(long).internal:80", "10.0.0.300:80"] }
                  d: { base_url: "http://127.0.0.1:1", servers: ["a b:80", "[::1:80", "host:99999"] }
                  b: { base_url: "http://127.0.0.1:1", servers: [] }
                  s: { stub: { status: 200 }, servers: ["10.0.0.1:80"] }
                routes:
                  - { name: r, match: { path: /x }, upstream: a }
                """) == [
                    "conf/gw.yaml:2: upstreams.a.servers[0]: invalid server address 'users.internal' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:2: upstreams.a.servers[1]: invalid server address '10.0.0.1:0' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:2: upstreams.a.servers[2]: invalid server address '10.0.0.1' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:2: upstreams.a.servers[3]: invalid server address 'a..b:80' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:3: upstreams.c.servers[0]: invalid server address '-a.internal:80' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:3: upstreams.c.servers[1]: invalid server address '\(long).internal:80' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:3: upstreams.c.servers[2]: invalid server address '10.0.0.300:80' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:4: upstreams.d.servers[0]: invalid server address 'a b:80' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:4: upstreams.d.servers[1]: invalid server address '[::1:80' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:4: upstreams.d.servers[2]: invalid server address 'host:99999' (use host:port or [IPv6]:port)",
                    "conf/gw.yaml:5: upstreams.b.servers: must list at least one address",
                    "conf/gw.yaml:6: upstreams.s.servers: a stub upstream has no servers (use them with base_url)"
                ])
    }

    @Test func rateLimitSettings() throws {
        let loaded = try config(
            """
            upstreams:
              up: { stub: { status: 200 } }
            routes:
              - { name: full, match: { path: /a }, upstream: up, rate_limit: { requests: 50, per: 10s, burst: 5, by: route } }
              - { name: short, match: { path: /b }, upstream: up, rate_limit: { requests: 20 } }
              - { name: none, match: { path: /c }, upstream: up }
            """)
        #expect(loaded.routes[0].rateLimit == RateLimitConfig(requests: 50, per: .seconds(10), burst: 5, by: .route))
        #expect(loaded.routes[1].rateLimit == RateLimitConfig(requests: 20, per: .seconds(1), burst: 20, by: .caller))
        #expect(loaded.routes[2].rateLimit == nil)
        #expect(
            problems(
                """
                upstreams:
                  up: { stub: { status: 200 } }
                routes:
                  - { name: a, match: { path: /a }, upstream: up, rate_limit: { requests: 0, per: 0s, burst: 0, by: ip, every: 1 } }
                  - { name: b, match: { path: /b }, upstream: up, rate_limit: { per: 1s } }
                  - { name: c, match: { path: /c }, upstream: up, rate_limit: 10 }
                """) == [
                    "conf/gw.yaml:4: routes[0].rate_limit.every: unknown key (expected one of: requests, per, burst, by)",
                    "conf/gw.yaml:4: routes[0].rate_limit.requests: must be between 1 and 1000000000",
                    "conf/gw.yaml:4: routes[0].rate_limit.per: must be greater than 0",
                    "conf/gw.yaml:4: routes[0].rate_limit.burst: must be between 1 and 1000000000",
                    "conf/gw.yaml:4: routes[0].rate_limit.by: invalid value 'ip' (caller or route)",
                    "conf/gw.yaml:5: routes[1].rate_limit.requests: required key is missing",
                    "conf/gw.yaml:6: routes[2].rate_limit: expected a mapping, got a scalar"
                ])
    }

    @Test func missingTopLevelKeys() {
        #expect(
            problems("") == [
                "conf/gw.yaml:1: upstreams: required key is missing",
                "conf/gw.yaml:1: routes: required key is missing"
            ])
        #expect(problems("- 1\n- 2\n") == ["conf/gw.yaml:1: (root): expected a mapping, got a list"])
    }

    @Test func yamlSyntaxErrorsNameLineAndColumn() {
        let lines = problems("upstreams:\n  a: [1, 2\nroutes: []\n")
        #expect(lines.count == 1)
        #expect(lines[0].hasPrefix("conf/gw.yaml:3: (yaml): YAML syntax error at column "), "\(lines)")
        let duplicate = problems("upstreams: {}\nroutes: []\nroutes: []\n")
        #expect(duplicate.count == 1 && duplicate[0].contains("duplicate key 'routes'"))
        #expect(duplicate[0].hasPrefix("conf/gw.yaml:2: (yaml): "))
    }

    @Test func environmentInterpolation() throws {
        let text = """
            upstreams:
              a:
                base_url: "http://${HOST}:${PORT}/v1"
                headers: { X-Literal: "$${NOT_A_VAR} costs $5" }
                access_token: { token: "${TOKEN}" }
            routes: []
            """
        let loaded = try config(text, env: ["HOST": "10.0.0.1", "PORT": "8000", "TOKEN": "s3cr3t"])
        let upstream = try #require(loaded.upstream(named: "a"))
        #expect(upstream.baseURL?.host == "10.0.0.1" && upstream.baseURL?.port == 8000)
        #expect(upstream.headers.first(name: "X-Literal") == "${NOT_A_VAR} costs $5")
        #expect(upstream.accessToken?.authorizationValue == "Bearer s3cr3t")
        let missing = problems(text, env: ["HOST": "h"])
        #expect(
            missing == [
                "conf/gw.yaml:3: upstreams.a.base_url: environment variable PORT is not set",
                "conf/gw.yaml:5: upstreams.a.access_token.token: environment variable TOKEN is not set"
            ])
    }

    @Test func secretFilesAreReadRelativeToTheConfigurationWithoutTheirLineBreak() throws {
        let text = """
            upstreams:
              a:
                base_url: "http://127.0.0.1:1"
                access_token: { token: "${file:secrets/token}" }
                headers: { X-Key: "key-${file:secrets/key}-${SUFFIX}" }
              b:
                base_url: "http://127.0.0.1:2"
                credentials: { user: svc, password: "${file:/run/secrets/password}" }
            routes: []
            """
        let files = ["conf/secrets/token": "t0ken\n", "/run/secrets/password": "pa ss\r\n\n", "conf/secrets/key": "k"]
        let loaded = try config(text, env: ["SUFFIX": "s"], files: files)
        let upstream = try #require(loaded.upstream(named: "a"))
        #expect(upstream.accessToken?.authorizationValue == "Bearer t0ken")
        #expect(loaded.upstream(named: "b")?.credentials?.password.value == "pa ss")
        #expect(upstream.headers.first(name: "X-Key") == "key-k-s")
        #expect(
            problems(text, env: ["SUFFIX": "s"], files: ["conf/secrets/key": "k"]) == [
                "conf/gw.yaml:4: upstreams.a.access_token.token: cannot read the secret file conf/secrets/token",
                "conf/gw.yaml:8: upstreams.b.credentials.password: cannot read the secret file /run/secrets/password"
            ])
        let misused = """
            server: { threads: "${file:threads}" }
            upstreams: { a: { base_url: "http://127.0.0.1:1", access_token: { token: "${file:big}" } } }
            routes: []
            """
        let big = String(repeating: "x", count: 64 * 1024 + 1)
        #expect(
            problems(misused, files: ["conf/threads": "s3cret-not-a-number", "conf/big": big]) == [
                "conf/gw.yaml:1: server.threads: expected an integer, got a value from a secret file",
                "conf/gw.yaml:2: upstreams.a.access_token.token: the secret file conf/big is larger than 64 KiB"
            ])
    }

    @Test func secretsFromTheEnvironmentNeverAppearInMessages() {
        let text = """
            server:
              threads: "${SECRET}"
            upstreams:
              a: { base_url: "${SECRET}" }
            routes: []
            """
        let lines = problems(text, env: ["SECRET": "hunter2-canary"])
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { !$0.contains("hunter2-canary") })
        #expect(lines[0] == "conf/gw.yaml:2: server.threads: expected an integer, got a value from the environment")
    }

    /// Names and URLs that came from the environment are not quoted either: an unknown upstream, a duplicate route
    /// name, a route shadowed by one so named, a base_url or token_url whose scheme is refused, a parameter name (the
    /// config fuzz target found the first).
    @Test func namesAndURLsFromTheEnvironmentNeverAppearInMessages() {
        let text = """
            upstreams:
              a: { base_url: "${SECRET}://h" }
              b:
                base_url: "http://127.0.0.1:1"
                access_token: { type: oauth2_client_credentials, token_url: "${SECRET}://h/t", client_id: c, client_secret: s }
            routes:
              - { name: "${SECRET}", match: { path: /a }, upstream: b }
              - { name: "${SECRET}", match: { path: /a }, upstream: "${SECRET}" }
              - { name: c, match: { path_params: "/x/{${SECRET}}" }, upstream: b }
            """
        let lines = problems(text, env: ["SECRET": "hunter2-canary"])
        #expect(lines.count >= 5, "\(lines)")
        #expect(lines.allSatisfy { !$0.contains("hunter2-canary") }, "\(lines)")
        #expect(
            lines.contains(
                "conf/gw.yaml:8: routes[1].upstream: unknown upstream a value from the environment (not defined under upstreams)"
            ), "\(lines)")
    }

    /// The other names the config fuzz target saw quoted: a route shadowed by one named from the environment, and a
    /// template's parameters (invalid or repeated) named from it.
    @Test func shadowingRoutesAndTemplateParametersFromTheEnvironmentAreNotQuoted() {
        let text = """
            upstreams:
              b: { stub: { status: 200 } }
            routes:
              - { name: "${NAME}", match: { path: /c }, upstream: b }
              - { name: shadowed, match: { path: /c }, upstream: b }
              - { name: p, match: { path_params: "/u/{${PARAM}}" }, upstream: b }
              - { name: q, match: { path_params: "/v/{x}/{${X}}" }, upstream: b }
            """
        let lines = problems(text, env: ["NAME": "Hunter3-Canary", "PARAM": "hunter4-canary!", "X": "x"])
        #expect(lines.allSatisfy { !$0.lowercased().contains("canary") }, "\(lines)")
        #expect(
            lines == [
                "conf/gw.yaml:5: routes[1].match: duplicate match: every request it matches is already taken by routes[0] "
                    + "(a value from the environment)",
                "conf/gw.yaml:6: routes[2].match.path_params: invalid parameter name (a value from the environment)",
                "conf/gw.yaml:7: routes[3].match.path_params: duplicate parameter (a value from the environment)"
            ], "\(lines)")
    }

    @Test func durationsAndSizes() {
        #expect(ConfigValue.parseDuration("250ms") == .milliseconds(250))
        #expect(ConfigValue.parseDuration("10s") == .seconds(10))
        #expect(ConfigValue.parseDuration("2m") == .seconds(120))
        #expect(ConfigValue.parseDuration("1.5s") == .milliseconds(1500))
        #expect(ConfigValue.parseDuration("0") == .zero)
        for bad in ["", "10", "s", "-1s", "1h", "1.s", "ms", "1e3ms", "99999999999999999999m", " 5 s"] {
            #expect(ConfigValue.parseDuration(bad) == nil, "\(bad)")
        }
        #expect(ConfigValue.parseSize("16384") == 16384)
        #expect(ConfigValue.parseSize("10MiB") == 10_485_760)
        #expect(ConfigValue.parseSize("512KiB") == 524_288)
        #expect(ConfigValue.parseSize("1.5KiB") == 1536)
        for bad in ["", "MiB", "-1", "1 ZiB", "10mib", "99999999999999999GiB"] {
            #expect(ConfigValue.parseSize(bad) == nil, "\(bad)")
        }
    }

    @Test func listenAddresses() {
        #expect(ListenAddress.parse("127.0.0.1:8080") == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(ListenAddress.parse("[::1]:8080") == ListenAddress(host: "::1", port: 8080))
        #expect(ListenAddress.parse("localhost:0")?.port == 0)
        for bad in [
            "127.0.0.1", "gateway.internal:8080", "999.1.1.1:80", ":80", "::1:80", "[::1]", "[::1]80", "host:65536",
            "host:-1", "host:http", "a b:1", ""
        ] {
            #expect(ListenAddress.parse(bad) == nil, "\(bad)")
        }
        let lines = problems(
            "server: { listen: [\"127.0.0.1:8080\", \"nope\"] }\nadmin: { listen: \"x\" }\nupstreams: {}\nroutes: []\n")
        #expect(
            lines == [
                "conf/gw.yaml:1: server.listen[1]: invalid listen address 'nope' (use IP:port, localhost:port or [IPv6]:port)",
                "conf/gw.yaml:2: admin.listen: invalid listen address 'x' (use IP:port, localhost:port or [IPv6]:port)"
            ])
    }

    @Test func trustedProxiesAreAddressesOrCIDRBlocks() throws {
        let lines = problems(
            """
            server:
              trusted_proxies: ["10.0.0.0/8", "192.0.2.10", "2001:db8::/32", "lb.internal", "10.0.0.0/33", "::/129", "1.2.3.4/x"]
            upstreams: {}
            routes: []

            """)
        let hint = "(use 10.0.0.0/8, 192.0.2.10 or 2001:db8::/32)"
        #expect(
            lines == [
                "conf/gw.yaml:2: server.trusted_proxies[3]: invalid address or CIDR block 'lb.internal' \(hint)",
                "conf/gw.yaml:2: server.trusted_proxies[4]: invalid address or CIDR block '10.0.0.0/33' \(hint)",
                "conf/gw.yaml:2: server.trusted_proxies[5]: invalid address or CIDR block '::/129' \(hint)",
                "conf/gw.yaml:2: server.trusted_proxies[6]: invalid address or CIDR block '1.2.3.4/x' \(hint)"
            ])
        #expect(
            problems("server: { trusted_proxies: 127.0.0.1 }\nupstreams: {}\nroutes: []\n").isEmpty, "one address alone"
        )
    }

    @Test func aLogFileThatCannotBeWrittenIsAProblem() {
        let lines = problems("logging: { output: /unwritable/gw.log }\nupstreams: {}\nroutes: []\n")
        #expect(lines == ["conf/gw.yaml:1: logging.output: no such directory: /unwritable/gw.log"])
        #expect(ConfigLoader.logOutputProblemOnDisk("/nonexistent-moya-dir/gw.log") == "no such directory")
        #expect(ConfigLoader.logOutputProblemOnDisk("/tmp") == "is a directory")
        #expect(
            ConfigLoader.logOutputProblemOnDisk(FileManager.default.temporaryDirectory.path + "/moya-new.log") == nil)
    }

    @Test func baseURLChecks() {
        func reason(_ url: String) -> String? {
            problems("upstreams:\n  a: { base_url: \"\(url)\" }\nroutes: []\n").first
        }
        #expect(
            reason("http://u:p@host/")
                == "conf/gw.yaml:2: upstreams.a.base_url: invalid base_url: must not contain userinfo (user:password@)")
        #expect(reason("host:80")?.contains("missing scheme") == true)
        #expect(reason("gopher://x")?.contains("unsupported scheme 'gopher'") == true)
        #expect(reason("http://x/?a=1")?.contains("query") == true)
        #expect(reason("http://x:0/")?.contains("invalid port") == true)
        #expect(reason("http://x/../y")?.contains("invalid path") == true)
        #expect(reason("https://[::1]:8443/base/") == nil)
    }

    @Test func routeValidation() {
        let text = """
            upstreams:
              a: { base_url: "http://127.0.0.1:1" }
            routes:
              - name: r
                match: { path_prefix: /api, methods: [get, GET] }
                upstream: a
              - name: r
                match: { path_prefix: /api, methods: [GET] }
                upstream: a
              - name: s
                match: { path: /x, path_prefix: /y }
                upstream: a
              - name: t
                match: { path_params: "/u/{id}/{id}" }
                upstream: a
              - name: u
                match: { path_prefix: /api/../x }
                upstream: a
              - name: v
                match: { path_prefix: /v, methods: [CONNECT, TRACE] }
                upstream: a
                clients: [web]
              - name: w
                match: { path_prefix: /w }
                upstream: a
                rewrite: { strip_prefix: /w/x }
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:5: routes[0].match.methods[0]: invalid method 'get' (methods are case-sensitive upper-case tokens, e.g. GET)",
                "conf/gw.yaml:7: routes[1].name: duplicate route name 'r' (also routes[0])",
                "conf/gw.yaml:11: routes[2].match: use only one of path, path_prefix and path_params (found path, path_prefix)",
                "conf/gw.yaml:14: routes[3].match.path_params: duplicate parameter 'id'",
                "conf/gw.yaml:17: routes[4].match.path_prefix: path must not contain empty, '.' or '..' segments",
                "conf/gw.yaml:20: routes[5].match.methods[0]: CONNECT is never routed",
                "conf/gw.yaml:20: routes[5].match.methods[1]: TRACE is never routed",
                "conf/gw.yaml:22: routes[5].clients: route lists clients but clients.api_keys is not configured",
                "conf/gw.yaml:26: routes[6].rewrite.strip_prefix: strip_prefix is not a prefix of the route's match path"
            ])
    }

    @Test func websocketRoutes() throws {
        let good = try load(
            """
            upstreams:
              a: { base_url: "http://127.0.0.1:1" }
            routes:
              - { name: ws, match: { path_prefix: /ws, methods: [GET] }, upstream: a, websocket: true }
              - { name: rest, match: { path_prefix: /api }, upstream: a }
              - { name: long, match: { path_prefix: /long }, upstream: a, websocket: { idle_timeout: 10m } }
            """
        ).get()
        #expect(good.routes.map(\.websocket) == [true, false, true])
        #expect(good.routes.map(\.websocketIdleTimeout) == [nil, nil, .seconds(600)])
        let rows = RouteTableFormatter.rows(RouteTable(config: good))
        #expect(rows.first { $0[1] == "ws" }?.last == "websocket", "`routes` shows it")
        #expect(rows.first { $0[1] == "long" }?.last == "websocket(idle 10m)")
        let text = """
            upstreams:
              a: { base_url: "http://127.0.0.1:1" }
              fake: { stub: { status: 200 } }
            routes:
              - { name: s, match: { path_prefix: /s }, upstream: fake, websocket: true }
              - { name: c, match: { path_prefix: /c }, upstream: a, coalesce: true, websocket: true }
              - { name: p, match: { path_prefix: /p, methods: [POST] }, upstream: a, websocket: true }
              - { name: t, match: { path_prefix: /t }, upstream: a, websocket: sometimes }
              - { name: u, match: { path_prefix: /u }, upstream: a, websocket: { idle: 1m } }
              - { name: v, match: { path_prefix: /v }, upstream: a, websocket: { idle_timeout: 0 } }
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:5: routes[0].websocket: a stub upstream cannot answer a WebSocket handshake (upstream 'fake' has stub)",
                "conf/gw.yaml:6: routes[1].websocket: a WebSocket route cannot coalesce (set coalesce: false)",
                "conf/gw.yaml:7: routes[2].websocket: a WebSocket handshake is a GET: add GET to match.methods",
                "conf/gw.yaml:8: routes[3].websocket: expected true or false, got 'sometimes'",
                "conf/gw.yaml:9: routes[4].websocket.idle: unknown key (expected one of: idle_timeout)",
                "conf/gw.yaml:10: routes[5].websocket.idle_timeout: must be greater than 0"
            ])
    }

    @Test func routeBodyLimits() throws {
        let loaded = try load(
            """
            server: { limits: { max_body_bytes: 1MiB } }
            upstreams:
              a: { base_url: "http://127.0.0.1:1" }
            routes:
              - { name: upload, match: { path_prefix: /upload }, upstream: a, max_body_bytes: 1GiB }
              - { name: tiny, match: { path_prefix: /tiny }, upstream: a, max_body_bytes: 1000 }
              - { name: none, match: { path_prefix: /none }, upstream: a, max_body_bytes: 0 }
              - { name: rest, match: { path_prefix: /api }, upstream: a }
            """
        ).get()
        #expect(loaded.routes.map(\.maxBodyBytes) == [1 << 30, 1000, 0, nil])
        #expect(
            GatewayRuntime.serverLimits(loaded).maxBodyBytes == 1 << 30, "the server takes what the largest route takes"
        )
        let rows = RouteTableFormatter.rows(RouteTable(config: loaded))
        #expect(rows.first { $0[1] == "upload" }?.last == "max_body 1GiB", "`routes` shows it")
        #expect(rows.first { $0[1] == "tiny" }?.last == "max_body 1000")
        #expect(
            problems(
                """
                upstreams:
                  a: { base_url: "http://127.0.0.1:1" }
                routes:
                  - { name: r, match: { path_prefix: /r }, upstream: a, max_body_bytes: lots }
                """) == [
                    "conf/gw.yaml:4: routes[0].max_body_bytes: invalid size 'lots' (use bytes, KiB or MiB, e.g. 16384, 10MiB)"
                ])
    }

    @Test func duplicateIdenticalMatches() {
        let text = """
            upstreams:
              a: { base_url: "http://127.0.0.1:1" }
            routes:
              - name: one
                match: { path_prefix: /api/, methods: [GET, POST] }
                upstream: a
              - name: two
                match: { path_prefix: /api, methods: [HEAD] }
                upstream: a
              - name: three
                match: { path_prefix: /api, methods: [PUT] }
                upstream: a
              - name: four
                match: { path_params: "/api/{x}" }
                upstream: a
              - name: five
                match: { path_params: "/api/{y}" }
                upstream: a
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:8: routes[1].match: duplicate match: every request it matches is already taken by routes[0] ('one')",
                "conf/gw.yaml:17: routes[4].match: duplicate match: every request it matches is already taken by routes[3] ('four')"
            ])
    }

    @Test func stubChecks() {
        let text = """
            upstreams:
              both:
                stub: { body: "x", body_file: missing.json }
              unreadable:
                stub: { body_file: missing.json }
              latency:
                stub: { latency: { distribution: uniform, min: 10ms }, delay: 5ms }
              normal:
                stub: { latency: { distribution: gaussian } }
              rate:
                stub: { error_rate: 1.5, status: 99 }
              none: {}
            routes: []
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:3: upstreams.both.stub: use only one of body, body_file and body_bytes (found body, body_file)",
                "conf/gw.yaml:3: upstreams.both.stub.body_file: cannot read the file conf/missing.json",
                "conf/gw.yaml:5: upstreams.unreadable.stub.body_file: cannot read the file conf/missing.json",
                "conf/gw.yaml:7: upstreams.latency.stub.latency: use either delay or latency, not both",
                "conf/gw.yaml:7: upstreams.latency.stub.latency.max: required key is missing for distribution: uniform",
                "conf/gw.yaml:9: upstreams.normal.stub.latency.distribution: invalid distribution 'gaussian' (fixed, uniform, normal or lognormal)",
                "conf/gw.yaml:11: upstreams.rate.stub.status: must be between 200 and 599",
                "conf/gw.yaml:11: upstreams.rate.stub.error_rate: must be between 0.0 and 1.0",
                "conf/gw.yaml:12: upstreams.none.base_url: required key is missing (or configure a stub)"
            ])
        let generated = try? config("upstreams:\n  b: { stub: { body_bytes: 1KiB } }\nroutes: []\n")
        #expect(generated?.upstream(named: "b")?.stub?.body.count == 1024)
    }

    @Test func lognormalLatency() throws {
        let loaded = try config(
            """
            upstreams:
              tail: { stub: { latency: { distribution: lognormal, median: 80ms, sigma: 0.5, max: 2s } } }
            routes: []
            """)
        #expect(
            loaded.upstream(named: "tail")?.stub?.latency
                == .lognormal(median: .milliseconds(80), sigma: 0.5, min: nil, max: .seconds(2)))
        let text = """
            upstreams:
              nosigma: { stub: { latency: { distribution: lognormal, median: 80ms } } }
              wide: { stub: { latency: { distribution: lognormal, median: 80ms, sigma: -1 } } }
              mixed: { stub: { latency: { distribution: lognormal, median: 80ms, sigma: 1, stddev: 5ms } } }
              normal: { stub: { latency: { distribution: normal, mean: 80ms, stddev: 5ms, sigma: 1 } } }
              bounds: { stub: { latency: { distribution: lognormal, median: 80ms, sigma: 1, min: 2s, max: 1s } } }
            routes: []
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:2: upstreams.nosigma.stub.latency.sigma: required key is missing for distribution: lognormal",
                "conf/gw.yaml:3: upstreams.wide.stub.latency.sigma: must be between 0.0 and 10.0",
                "conf/gw.yaml:4: upstreams.mixed.stub.latency.stddev: not used by distribution: lognormal",
                "conf/gw.yaml:5: upstreams.normal.stub.latency.sigma: not used by distribution: normal",
                "conf/gw.yaml:6: upstreams.bounds.stub.latency.max: must not be less than min"
            ])
    }

    @Test func tlsFilesMustExist() {
        let text = """
            server:
              tls: { listen: ["127.0.0.1:8443"], certificate: certs/a.pem, private_key: /abs/key.pem }
            upstreams:
              a: { base_url: "https://x", tls: { ca_file: ca.pem } }
            routes: []
            """
        #expect(
            problems(text, files: ["conf/certs/a.pem": ""]) == [
                "conf/gw.yaml:2: server.tls.private_key: file not found or not readable: /abs/key.pem",
                "conf/gw.yaml:4: upstreams.a.tls.ca_file: file not found or not readable: conf/ca.pem"
            ])
        #expect(problems(text, files: ["conf/certs/a.pem": "", "/abs/key.pem": "", "conf/ca.pem": ""]).isEmpty)
    }

    @Test func accessTokenAndCredentials() {
        let text = """
            upstreams:
              a:
                base_url: http://x
                access_token: { type: digest, token: t }
              b:
                base_url: http://x
                access_token: { type: custom, token: t }
              c:
                base_url: http://x
                access_token: { token: t }
                credentials: { user: u, password: p }
              d:
                base_url: http://x
                credentials: { password: p }
            routes: []
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:4: upstreams.a.access_token.type: invalid type 'digest' (bearer, basic, custom or oauth2_client_credentials)",
                "conf/gw.yaml:7: upstreams.b.access_token.scheme: required key is missing",
                "conf/gw.yaml:11: upstreams.c.credentials: use either access_token or credentials, not both",
                "conf/gw.yaml:14: upstreams.d.credentials.user: required key is missing"
            ])
    }

    @Test func unreadableFileIsOneProblem() {
        let result = memoryLoader().load(path: "/nope/gw.yaml", environment: [:])
        guard case .failure(let errors) = result else {
            Issue.record("expected failure")
            return
        }
        #expect(errors.description == "/nope/gw.yaml:1: (file): cannot read the configuration file")
    }

    @Test func configPathResolution() {
        #expect(
            ConfigLoader.resolvePath(explicit: "a.yaml", environment: ["MOYA_GATEWAY_CONFIG": "b.yaml"]) == "a.yaml")
        #expect(ConfigLoader.resolvePath(explicit: nil, environment: ["MOYA_GATEWAY_CONFIG": "b.yaml"]) == "b.yaml")
        #expect(ConfigLoader.resolvePath(explicit: nil, environment: [:]) == "Configuration/gateway.yaml")
    }

    /// FUZZ-06 in miniature: mutated files never trap, and every problem carries a location.
    @Test func mutatedFilesNeverTrapAndAlwaysLocateProblems() throws {
        let base = try String(
            contentsOf: packageRoot.appendingPathComponent("Configuration/gateway.yaml"), encoding: .utf8)
        var rng = SplitMix64(seed: 42)
        let alphabet = Array("{}[]:,-\"' \n\t#&*!|>%@`$abc019/.")
        for _ in 0..<300 {
            var chars = Array(base)
            for _ in 0..<Int(rng.next() % 6 + 1) {
                guard !chars.isEmpty else { break }
                let index = Int(rng.next() % UInt64(chars.count))
                switch rng.next() % 3 {
                case 0: chars[index] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: chars.remove(at: index)
                default: chars.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: index)
                }
            }
            if case .failure(let errors) = load(String(chars), files: ["conf/stubs/catalog.json": "{}"]) {
                #expect(!errors.problems.isEmpty)
                #expect(errors.problems.allSatisfy { $0.line >= 1 && !$0.keyPath.isEmpty && !$0.reason.isEmpty })
            }
        }
    }
}
