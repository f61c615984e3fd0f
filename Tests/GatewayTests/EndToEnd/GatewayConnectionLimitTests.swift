import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// `server.limits.max_requests_per_connection` and `upstreams.NAME.pool.max_requests_per_connection` through the real
/// `moya-gateway` binary: `h2load -n 20000 -c 10 -m 10` completes with none failed when the limit is lifted (the
/// default 1000 sends GOAWAY half way), a limit of 3 closes HTTP/1.1 connections after 3 requests and HTTP/2
/// connections after 3 streams, and an upstream pool opens a new connection after its limit.
@Suite(.serialized) struct GatewayConnectionLimitTests {
    static func config(tlsPort: Int? = nil, limit: Int, upstreamPort: Int? = nil) -> String {
        var text = """
            server:
              listen: ["127.0.0.1:PORT"]
              threads: 1
              limits: { max_requests_per_connection: \(limit) }
            """
        if let tlsPort {
            text +=
                "\n  tls: { listen: [\"127.0.0.1:\(tlsPort)\"], certificate: tls/server.pem, private_key: tls/server.key }"
        }
        text += """

            admin:
              listen: "127.0.0.1:ADMIN"
            logging: { access_log: false }
            upstreams:
              stubbed: { stub: { status: 200, body: "ok" } }
            """
        if let upstreamPort {
            text += """

                  capped: { base_url: "http://127.0.0.1:\(upstreamPort)/capped", pool: { max_requests_per_connection: 2, http2: never } }
                  capped-h2: { base_url: "http://127.0.0.1:\(upstreamPort)/capped-h2", pool: { max_requests_per_connection: 2, http2: always } }
                  free: { base_url: "http://127.0.0.1:\(upstreamPort)/free", pool: { http2: never } }
                """
        }
        text += """

            routes:
              - { name: hello, match: { path: /hello }, upstream: stubbed }
            """
        if upstreamPort != nil {
            text += """

                  - { name: capped, match: { path_prefix: /capped }, upstream: capped, rewrite: { strip_prefix: /capped } }
                  - { name: capped-h2, match: { path_prefix: /h2 }, upstream: capped-h2, rewrite: { strip_prefix: /h2 } }
                  - { name: free, match: { path_prefix: /free }, upstream: free, rewrite: { strip_prefix: /free } }
                """
        }
        return text
    }

    /// h2load's `requests:` summary as (succeeded, failed).
    static func h2load(_ arguments: [String]) throws -> (succeeded: Int, failed: Int, summary: String) {
        let output = try ProcessRunner.run("h2load", arguments, timeout: 120)
        let summary =
            output.stdout.split(separator: "\n").first { $0.hasPrefix("requests:") }.map(String.init) ?? output.stdout
        func number(before word: String) -> Int {
            let parts = summary.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return parts.first { $0.hasSuffix(word) }.flatMap { Int($0.split(separator: " ").first ?? "") } ?? -1
        }
        return (number(before: "succeeded"), number(before: "failed"), summary)
    }

    @Test func h2loadCompletesWhenTheLimitIsLifted() async throws {
        let tlsPort = try freeLoopbackPort()
        let certificates = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory("gateway-limit-tls"))
        let gateway = try await GatewayProcess(config: Self.config(tlsPort: tlsPort, limit: 0)) { directory, _ in
            try FileManager.default.createDirectory(atPath: "\(directory)/tls", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: certificates.cert, toPath: "\(directory)/tls/server.pem")
            try FileManager.default.copyItem(atPath: certificates.key, toPath: "\(directory)/tls/server.key")
        }
        let result = try Self.h2load(["-n", "20000", "-c", "10", "-m", "10", "https://127.0.0.1:\(tlsPort)/hello"])
        #expect(result.succeeded == 20000 && result.failed == 0, "\(result.summary)")
        #expect(gateway.stop() == 0)
    }

    @Test func aLimitOfThreeClosesConnectionsAfterThreeRequests() async throws {
        let gateway = try await GatewayProcess(config: Self.config(limit: 3))
        // HTTP/1.1: four requests on one connection get three answers, the third with `Connection: close`.
        let client = try RawClient(port: gateway.port)
        client.send(String(repeating: "GET /hello HTTP/1.1\r\nHost: g\r\n\r\n", count: 4))
        let (bytes, closed) = client.readAll(timeout: 3)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.occurrences(of: "HTTP/1.1 200 ") == 3, "\(text)")
        #expect(closed, "the connection closes after the third answer")
        let third = text.components(separatedBy: "HTTP/1.1 200 ").last ?? ""
        #expect(third.lowercased().contains("connection: close"), "\(third)")

        // HTTP/2 (h2c): three streams, then GOAWAY; h2load does not reconnect, so the rest fail.
        let result = try Self.h2load(["-n", "6", "-c", "1", "-m", "1", "http://127.0.0.1:\(gateway.port)/hello"])
        #expect(result.succeeded == 3 && result.failed == 3, "\(result.summary)")

        // A reload lifts the limit for connections opened from then on.
        try gateway.rewriteConfig(Self.config(limit: 0))
        gateway.signal(SIGHUP)
        for _ in 0..<100 where !gateway.stdout.contains("\"msg\":\"reloaded\"") {
            try await Task.sleep(for: .milliseconds(20))
        }
        let lifted = try Self.h2load(["-n", "6", "-c", "1", "-m", "1", "http://127.0.0.1:\(gateway.port)/hello"])
        #expect(lifted.succeeded == 6, "\(lifted.summary)")
        #expect(gateway.stop() == 0)
    }

    @Test func anUpstreamPoolRetiresConnectionsAfterItsLimit() async throws {
        let upstream = ConnectionCounter()
        let server = LoopbackServer()
        try await server.start(upstream)
        let gateway = try await GatewayProcess(config: Self.config(limit: 1000, upstreamPort: server.port))
        let client = HTTPClient()
        for prefix in ["/capped", "/h2", "/free"] {
            for index in 0..<6 {
                #expect(
                    try await client.execute(HTTPClientRequest(url: "\(gateway.url)\(prefix)/\(index)")).status == 200)
            }
        }
        #expect(upstream.connections(for: "/capped") == 3, "two requests per HTTP/1.1 connection")
        #expect(upstream.connections(for: "/capped-h2") == 3, "two streams per HTTP/2 connection")
        #expect(upstream.connections(for: "/free") == 1, "no limit: one kept connection")
        let routes = try CheckCommandTests.run(["routes", "--config", gateway.configPath])
        #expect(routes.stdout.contains("upstream_requests_per_connection 2"), "\(routes.stdout)")
        #expect(gateway.stop() == 0)
    }
}

/// An upstream that counts the client connections (peer ports) each path prefix's requests came on.
final class ConnectionCounter: HTTPServerHandler {
    private let seen = Locked<[String: Set<Int>]>([:])

    func connections(for prefix: String) -> Int { seen.withLock { $0[prefix]?.count ?? 0 } }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let prefix = "/" + (request.head.path.split(separator: "/").first.map(String.init) ?? "")
        let port = request.remoteAddress?.port ?? -1
        seen.withLock { _ = $0[prefix, default: []].insert(port) }
        return HTTPServerResponse(status: 200, body: Array("ok".utf8))
    }
}
