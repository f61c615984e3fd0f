import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `server` keys through the real `moya-gateway` binary, over raw sockets: an IPv6 listener beside an IPv4 one, and
/// the cap on open client connections.
@Suite(.serialized) struct GatewayServerSettingsTests {
    /// `listen` takes `[::1]:PORT` beside `127.0.0.1:PORT`: both serve, and the upstream is told each client's own
    /// address (`X-Forwarded-For`, `X-Real-IP`), as is the access log.
    @Test(.enabled(if: ipv6LoopbackIsAvailable(), "this machine has no IPv6 loopback"))
    func anIPv6ListenerServesBesideAnIPv4One() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT", "[::1]:PORT"]
                  threads: 1
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  echo: { base_url: "http://127.0.0.1:\(upstream.port)" }
                routes:
                  - { name: echo, match: { path_prefix: / }, upstream: echo }
                """)
        for (host, id) in [("::1", "six"), ("127.0.0.1", "four")] {
            let client = try RawClient(port: gateway.port, host: host)
            client.send("GET /\(id) HTTP/1.1\r\nHost: gw\r\nX-Request-Id: \(id)\r\nConnection: close\r\n\r\n")
            let answer = String(decoding: client.readAll(timeout: 5).bytes, as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(host): \(answer.prefix(200))")
            let received = try #require(upstream.requests.first { $0.head.target == "/\(id)" }).head.headers
            #expect(received["X-Forwarded-For"] == [host] && received["X-Real-IP"] == [host], "\(received)")
        }
        let lines = await gateway.accessLog(atLeast: 2)
        #expect(lines.first { $0["request_id"] as? String == "six" }?["client_ip"] as? String == "::1", "\(lines)")
        gateway.stop()
    }

    /// `limits.max_connections`: a connection past the cap is closed without an answer (nothing read from it), the
    /// ones below it are served, and once one of them closes a new connection is served again.
    @Test func connectionsPastTheCapAreClosedUntilOneLeaves() async throws {
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  limits: { max_connections: 3 }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  canned: { stub: { status: 200, body: "ok" } }
                routes:
                  - { name: canned, match: { path: /ok }, upstream: canned }
                """)
        let port = gateway.port
        let outcome = try await offPool { try ConnectionCapProbe.run(port: port, cap: 3, target: "/ok", bodyEnd: "ok") }
        #expect(outcome.held == 3)
        #expect(outcome.overClosed && outcome.overBytes == 0, "the fourth connection is closed without an answer")
        #expect(outcome.servedAfter, "after one of the three leaves, a new connection is served")
        gateway.stop()
    }
}
