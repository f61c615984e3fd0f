import Foundation
import HTTPClientCore
import HTTPWire
import TestSupport
import Testing

/// Signals, health endpoints, reloads that touch what only a restart changes, and the metrics, with the real binary.
@Suite(.serialized) struct GatewayLifecycleTests {
    static func config(upstreamPort: Int, listen: String = "127.0.0.1:PORT", admin: String = "127.0.0.1:ADMIN")
        -> String
    {
        """
        server:
          listen: ["\(listen)"]
          threads: 1
        admin:
          listen: "\(admin)"
        upstreams:
          open: { base_url: "http://127.0.0.1:\(upstreamPort)" }
          refused: { base_url: "http://127.0.0.1:1" }
        routes:
          - { name: open, match: { path_prefix: /open }, upstream: open }
          - { name: shared, match: { path_prefix: /shared }, upstream: open, coalesce: true }
          - { name: refused, match: { path: /refused }, upstream: refused }
        """
    }

    static func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    /// SIGINT drains like SIGTERM: the listeners close at once, `/readyz` says 503 while `/healthz` stays 200, the
    /// request in flight is answered, and the process exits 0.
    @Test func sigintDrainsAndReadyzFailsWhileDraining() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = HTTPClient()
        let admin = "http://127.0.0.1:\(gateway.adminPort)"
        #expect(try await client.execute(HTTPClientRequest(url: "\(admin)/readyz")).status == 200)
        let url = "\(gateway.url)/open/slow?ms=1500"
        let inFlight = Task { try await client.execute(HTTPClientRequest(url: url)) }
        try await Task.sleep(for: .milliseconds(300))
        gateway.signal(SIGINT)
        var ready = 200
        for _ in 0..<50 where ready == 200 {
            try await Task.sleep(for: .milliseconds(20))
            ready = try await client.execute(HTTPClientRequest(url: "\(admin)/readyz")).status
        }
        #expect(ready == 503, "/readyz fails while draining")
        #expect(
            try await client.execute(HTTPClientRequest(url: "\(admin)/healthz")).status == 200, "the process still runs"
        )
        #expect((try? RawClient(port: gateway.port)) == nil, "new connections are refused at once")
        let response = try await inFlight.value
        #expect(response.status == 200)
        #expect(Self.text(response).contains("hit"))
        #expect(gateway.stop() == 0)
        #expect(gateway.stdout.contains("drained"))
    }

    /// A reload that changes the listeners keeps the old ones (they change only with a restart) and names them in a
    /// warning; the rest of the file is applied.
    @Test func aReloadThatMovesTheListenersKeepsThemAndSaysSo() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = HTTPClient()
        let otherPort = try freeLoopbackPort()
        let otherAdmin = try freeLoopbackPort()
        let moved =
            Self.config(upstreamPort: upstream.port, listen: "127.0.0.1:\(otherPort)", admin: "127.0.0.1:\(otherAdmin)")
            + "\n  - { name: added, match: { path_prefix: /added }, upstream: open }\n"
        try gateway.rewriteConfig(moved)
        gateway.signal(SIGHUP)
        var added = 404
        for _ in 0..<100 where added == 404 {
            try await Task.sleep(for: .milliseconds(20))
            added = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/added/x")).status
        }
        #expect(added == 200, "the new route is served on the old listener")
        #expect((try? RawClient(port: otherPort)) == nil, "no new listener without a restart")
        #expect(
            try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/readyz")).status
                == 200)
        gateway.stop()
        let warning = gateway.stdout.split(separator: "\n").first { $0.contains("only after a restart") }
        #expect(warning?.contains("server.listen") == true, "\(gateway.stdout)")
        #expect(warning?.contains("admin.listen") == true, "\(gateway.stdout)")
    }

    /// A reload swaps the config for the next request; a request already in flight finishes on the config it started
    /// with, stubbed (its delay and body) or proxied (its upstream's `validation` decides its answer after the reload).
    @Test func requestsInFlightFinishOnTheConfigTheyStartedWith() async throws {
        let upstream = try await RecordingUpstream.start()
        func config(_ version: String, validation: String) -> String {
            """
            \(GatewayProcess.listeners)
            upstreams:
              stubbed: { stub: { status: 200, headers: { X-Version: \(version) }, body: "\(version)", delay: \(version == "old" ? "2s" : "0s") } }
              origin: { base_url: "http://127.0.0.1:\(upstream.port)", validation: \(validation) }
            routes:
              - { name: stubbed, match: { path: /stubbed }, upstream: stubbed }
              - { name: origin, match: { path_prefix: /origin }, upstream: origin, rewrite: { strip_prefix: /origin } }
            """
        }
        let gateway = try await GatewayProcess(config: config("old", validation: "none"))
        let client = HTTPClient()
        let url = gateway.url
        let stubbed = Task { try await client.execute(HTTPClientRequest(url: "\(url)/stubbed")) }
        try await Task.sleep(for: .milliseconds(300))
        let proxied = Task { try await client.execute(HTTPClientRequest(url: "\(url)/origin/status/500?ms=1000")) }
        for _ in 0..<100 where upstream.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        try await GatewayReloadSettingsTests.reload(gateway, to: config("new", validation: "success"), count: 1)

        let after = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stubbed"))
        #expect(Self.text(after) == "new" && after.headers.first(name: "X-Version") == "new")
        #expect(
            try await client.execute(HTTPClientRequest(url: "\(gateway.url)/origin/status/500")).status == 502,
            "the new validation applies to the next request")
        let before = try await stubbed.value
        #expect(Self.text(before) == "old" && before.headers.first(name: "X-Version") == "old")
        let inFlight = try await proxied.value
        #expect(inFlight.status == 500 && Self.text(inFlight) == "status 500", "validation: none, as when it started")
        gateway.stop()
    }

    /// The metrics the sketch lists, scraped after traffic: requests by route and status, the latency histograms,
    /// upstream errors, coalesced requests and open connections.
    @Test func metricsCountRequestsErrorsCoalescingAndLatency() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerOrigin = 50
        let client = HTTPClient(configuration: configuration)
        for _ in 0..<3 {
            #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/open/a")).status == 200)
        }
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/refused")).status == 502)
        let base = gateway.url
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    (try? await client.execute(HTTPClientRequest(url: "\(base)/shared/slow?ms=300")))?.status ?? -1
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        let metrics = Self.text(
            try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics")))
        func value(_ series: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap {
                Double($0.split(separator: " ").last ?? "")
            }
        }
        #expect(value(#"moya_gateway_requests_total{route="open",status="200"}"#) == 3, "\(metrics)")
        #expect(value(#"moya_gateway_requests_total{route="refused",status="502"}"#) == 1)
        #expect(value(#"moya_gateway_request_duration_seconds_count{route="open"}"#) == 3)
        #expect(value(#"moya_gateway_upstream_errors_total{upstream="refused",error="bad_gateway"}"#) == 1)
        let leaders = value(#"moya_gateway_coalesced_requests_total{route="shared",role="leader"}"#) ?? 0
        let followers = value(#"moya_gateway_coalesced_requests_total{route="shared",role="follower"}"#) ?? 0
        #expect(leaders >= 1 && leaders + followers == 20, "leaders \(leaders), followers \(followers)")
        #expect(
            value(#"moya_gateway_upstream_first_byte_seconds_count{upstream="open"}"#) == 3 + leaders,
            "once per network call: 3 alone and one per flight")
        #expect(
            (value(#"moya_gateway_upstream_first_byte_seconds_bucket{upstream="open",le="10.0"}"#) ?? 0) >= 3 + leaders)
        #expect((value("moya_gateway_open_connections") ?? 0) >= 1, "the client's pooled connections are open")
        gateway.stop()
    }
}
