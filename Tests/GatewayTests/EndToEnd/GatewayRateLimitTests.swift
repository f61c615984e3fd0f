import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `routes[].rate_limit` through the real binary: past its budget a caller gets 429 with `Retry-After` and the call
/// never reaches the upstream; callers are told apart by API key or by address, or share the route's budget; instant
/// stubs are limited too; and a reload keeps the budgets of a limit it did not change.
@Suite(.serialized) struct GatewayRateLimitTests {
    static func get(_ client: HTTPClient, _ url: String, key: String? = nil) async throws -> HTTPClientResponse {
        var request = try HTTPClientRequest(url: url)
        if let key { request.headers.add(name: "X-Api-Key", value: key) }
        return try await client.execute(request)
    }

    @Test func callersWithAPIKeysHaveTheirOwnBudgetsOrShareTheRoutes() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                clients: { api_keys: { header: X-Api-Key, keys: { billing: "key-billing", web: "key-web" } } }
                upstreams:
                  up: { base_url: "http://127.0.0.1:\(upstream.port)" }
                routes:
                  - { name: per-caller, match: { path_prefix: /caller }, upstream: up, rate_limit: { requests: 2, per: 10s } }
                  - { name: shared, match: { path_prefix: /shared }, upstream: up, rate_limit: { requests: 1, per: 10s, by: route } }
                """)
        let client = HTTPClient()
        for _ in 0..<2 {
            #expect(try await Self.get(client, "\(gateway.url)/caller/a", key: "key-billing").status == 200)
        }
        let refused = try await Self.get(client, "\(gateway.url)/caller/a", key: "key-billing")
        #expect(refused.status == 429)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("\"error\":\"too_many_requests\""))
        #expect(refused.headers.first(name: "Retry-After") == "5", "one call every 5 s once the burst of 2 is spent")
        #expect(refused.headers.first(name: "X-Request-Id") != nil)
        #expect(
            try await Self.get(client, "\(gateway.url)/caller/a", key: "key-web").status == 200,
            "web has its own budget")
        #expect(try await Self.get(client, "\(gateway.url)/caller/a").status == 401, "no key: 401 before any budget")
        #expect(upstream.requests.count == 3, "a refused call never reaches the upstream")

        #expect(try await Self.get(client, "\(gateway.url)/shared/a", key: "key-billing").status == 200)
        let shared = try await Self.get(client, "\(gateway.url)/shared/a", key: "key-web")
        #expect(shared.status == 429 && shared.headers.first(name: "Retry-After") == "10", "one budget for the route")
        #expect(upstream.requests.count == 4)
        // Refused on the event loop with no task: a client that half-closes after its request still gets its 429.
        let raw = try RawClient(port: gateway.port)
        raw.send("GET /shared/a HTTP/1.1\r\nHost: g\r\nX-Api-Key: key-web\r\n\r\n")
        raw.shutdownWrite()
        let answer = String(decoding: raw.readAll(timeout: 3).bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 429 ") && answer.contains("Retry-After: "), "\(answer)")

        let metrics = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics"))
        let text = String(decoding: metrics.body, as: UTF8.self)
        #expect(text.contains("moya_gateway_rate_limited_total{route=\"per-caller\"} 1"), "\(text)")
        #expect(text.contains("moya_gateway_rate_limited_total{route=\"shared\"} 2"), "\(text)")
        gateway.stop()
        let limited = gateway.accessLog.filter { $0["status"] as? Int == 429 }
        #expect(limited.count == 3)
        #expect(limited.allSatisfy { $0["upstream_error"] as? String == "rate limited" }, "\(limited)")
    }

    @Test func withoutKeysCallersAreToldApartByAddressAndAReloadKeepsUnchangedBudgets() async throws {
        let upstream = try await RecordingUpstream.start()
        func config(stubLimit: String) -> String {
            """
            \(GatewayProcess.listeners)
            upstreams:
              up: { base_url: "http://127.0.0.1:\(upstream.port)" }
              canned: { stub: { status: 200, body: "ok" } }
            routes:
              - { name: proxied, match: { path_prefix: /up }, upstream: up, rate_limit: { requests: 1, per: 1m } }
              - { name: stubbed, match: { path_prefix: /stub }, upstream: canned, rate_limit: \(stubLimit) }
            """
        }
        let gateway = try await GatewayProcess(config: config(stubLimit: "{ requests: 1, per: 1m }"))
        func status(_ path: String, from source: String = "127.0.0.1") throws -> String {
            try ProcessRunner.run(
                "curl",
                [
                    "-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface", source,
                    "\(gateway.url)\(path)"
                ]
            ).stdout
        }
        #expect(try status("/up/a") == "200")
        #expect(try status("/up/a") == "429")
        #expect(try status("/up/a", from: "127.0.0.2") == "200", "another address, another budget")
        #expect(upstream.requests.count == 2)
        // A stub that answers at once is limited as well.
        #expect(try status("/stub") == "200")
        #expect(try status("/stub") == "429")

        // The proxied route's limit is unchanged: its budgets survive the reload; the stub's changed: a fresh budget.
        try gateway.rewriteConfig(config(stubLimit: "{ requests: 2, per: 1m }"))
        let reloads = gateway.stdout.components(separatedBy: "\"reloaded\"").count
        gateway.signal(SIGHUP)
        for _ in 0..<100 where gateway.stdout.components(separatedBy: "\"reloaded\"").count == reloads {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(gateway.stdout.components(separatedBy: "\"reloaded\"").count > reloads, "reloaded")
        #expect(try status("/up/a") == "429")
        #expect(try status("/stub") == "200")
        #expect(upstream.requests.count == 2)
    }

    /// Behind a load balancer listed in `server.trusted_proxies`, each client it forwards for has its own budget (read
    /// from `X-Forwarded-For`); a peer that is not listed cannot pick its budget by writing the header.
    @Test func behindATrustedProxyCallersAreToldApartByXForwardedFor() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  trusted_proxies: ["127.0.0.1"]
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  up: { base_url: "http://127.0.0.1:\(upstream.port)" }
                routes:
                  - { name: limited, match: { path_prefix: /up }, upstream: up, rate_limit: { requests: 1, per: 1m } }
                """)
        func status(from source: String, forwardedFor: String? = nil) throws -> String {
            var arguments = [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface", source,
                "-H", "X-Real-IP: 192.0.2.66"
            ]
            if let forwardedFor { arguments += ["-H", "X-Forwarded-For: \(forwardedFor)"] }
            return try ProcessRunner.run("curl", arguments + ["\(gateway.url)/up/a"]).stdout
        }
        // Through the trusted balancer (127.0.0.1): one budget per forwarded client, whatever it claimed on the left.
        #expect(try status(from: "127.0.0.1", forwardedFor: "198.51.100.7") == "200")
        #expect(try status(from: "127.0.0.1", forwardedFor: "198.51.100.7") == "429")
        #expect(
            try status(from: "127.0.0.1", forwardedFor: "203.0.113.1, 198.51.100.7") == "429",
            "a spoofed left entry changes nothing")
        #expect(try status(from: "127.0.0.1", forwardedFor: "198.51.100.8") == "200", "another client, another budget")
        // An IPv6 client is limited by its /64.
        #expect(try status(from: "127.0.0.1", forwardedFor: "2001:db8:0:1::a") == "200")
        #expect(try status(from: "127.0.0.1", forwardedFor: "2001:db8:0:1::b") == "429", "same /64, same budget")
        // A peer that is not trusted is limited by its own address, whatever header it sends.
        #expect(try status(from: "127.0.0.2", forwardedFor: "198.51.100.20") == "200")
        #expect(try status(from: "127.0.0.2", forwardedFor: "198.51.100.21") == "429")
        #expect(upstream.requests.count == 4)
        // The header still goes upstream with the peer appended (the limit reads it, it does not rewrite it).
        #expect(upstream.requests.first?.head.headers.first(name: "X-Forwarded-For") == "198.51.100.7, 127.0.0.1")
        // X-Real-IP and the access log's client_ip are the address the limit used; the client's own X-Real-IP is not
        // forwarded.
        #expect(
            upstream.requests.map { $0.head.headers["X-Real-IP"] }
                == [["198.51.100.7"], ["198.51.100.8"], ["2001:db8:0:1::a"], ["127.0.0.2"]])
        gateway.stop()
        #expect(
            gateway.accessLog.compactMap { $0["client_ip"] as? String }
                == [
                    "198.51.100.7", "198.51.100.7", "198.51.100.7", "198.51.100.8", "2001:db8:0:1::a",
                    "2001:db8:0:1::b",
                    "127.0.0.2", "127.0.0.2"
                ])
    }
}
