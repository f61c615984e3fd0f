import Foundation
import HTTPClientCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// A coalesced flight belongs to the group (docs/reliability.md COAL-04, COAL-05, COAL-06, COAL-09): the leader's client
/// leaving does not fail the followers, an error reaches every waiter promptly, a response meant for one caller is
/// shared only within one identity and on the record, and nothing is cached past the flight.
@Suite(.serialized) struct GatewayCoalescingFaultTests {
    static func config(_ upstreamPort: Int) -> String {
        """
        \(GatewayProcess.listeners)
        upstreams:
          api: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { connect: 1s, response: 1s }, pool: { max_connections: 64 } }
        routes:
          - { name: api, match: { path_prefix: /api }, upstream: api, rewrite: { strip_prefix: /api }, coalesce: true }
        """
    }

    /// `count` identical GETs at once; the status and body of each.
    static func burst(_ count: Int, url: String, client: HTTPClient) async -> [(Int, String)] {
        await withTaskGroup(of: (Int, String).self) { group in
            for _ in 0..<count {
                group.addTask {
                    guard let response = try? await client.execute(HTTPClientRequest(url: url)) else { return (-1, "") }
                    return (response.status, String(decoding: response.body, as: UTF8.self))
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func theLeadersClientLeavingDoesNotFailTheFollowers() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstream.port))
        let path = "/api/slow?ms=500&k=leader-leaves"
        // The leader: a raw connection that sends the request and closes at 50 ms.
        let leader = try RawClient(port: gateway.port)
        leader.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
        try await Task.sleep(for: .milliseconds(20))
        let client = HTTPClient()
        async let followers = Self.burst(10, url: "\(gateway.url)\(path)", client: client)
        try await Task.sleep(for: .milliseconds(30))
        leader.shutdownWrite()
        close(leader.fd)
        let results = await followers
        #expect(results.allSatisfy { $0.0 == 200 }, "\(results)")
        #expect(Set(results.map(\.1)).count == 1, "one flight, one complete body for all: \(Set(results.map(\.1)))")
        #expect(results.first?.1 == "{\"hit\":1}")
        #expect(upstream.requests.count == 1, "the flight was not sent again when its first caller left")
        gateway.stop()
        let roles = gateway.accessLog.compactMap { $0["coalesced"] as? String }
        #expect(roles.filter { $0 == "follower" }.count == 10)
    }

    @Test func anErrorReachesEveryWaiterAndIsNotKept() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstream.port))
        let client = HTTPClient()
        // COAL-05: the upstream answers 500 after 300 ms: every waiter gets that answer, once.
        var started = ContinuousClock.now
        let failed = await Self.burst(20, url: "\(gateway.url)/api/status/500?ms=300", client: client)
        #expect(failed.allSatisfy { $0.0 == 500 }, "\(failed.map(\.0))")
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(upstream.requests.count == 1)

        // A timeout (the upstream's 1 s response timeout) reaches every waiter as a 504, promptly.
        upstream.reset()
        started = ContinuousClock.now
        let timedOut = await Self.burst(20, url: "\(gateway.url)/api/slow?ms=3000&k=timeout", client: client)
        #expect(timedOut.allSatisfy { $0.0 == 504 }, "\(timedOut.map(\.0))")
        #expect(ContinuousClock.now - started < .milliseconds(2500), "no waiter held past the upstream's timeout")
        #expect(upstream.requests.count == 1)

        // COAL-09: once the flight is over, the same request goes upstream again (nothing cached).
        upstream.reset()
        let again = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/status/500?ms=10"))
        #expect(again.status == 500)
        #expect(upstream.requests.count == 1)
        gateway.stop()
    }

    /// COAL-06: a response marked for one caller (`Set-Cookie`, `Cache-Control: private`) still answers its flight (the
    /// sketch's promise), but only callers of one identity share a flight, and each follower that got one is logged
    /// (without the cookie). The access log marks exactly the caller whose request was sent as the leader.
    @Test func anUnshareableResponseIsSharedOnlyWithinAnIdentityAndLogged() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstream.port))
        let client = HTTPClient()
        let url = "\(gateway.url)/api/private"
        let anonymous = await Self.burst(5, url: url, client: client)
        #expect(anonymous.allSatisfy { $0.0 == 200 }, "\(anonymous.map(\.0))")
        #expect(upstream.requests.count == 1)

        upstream.reset()
        let identities = await withTaskGroup(of: Int.self) { group in
            for index in 0..<6 {
                group.addTask {
                    let headers: HTTPFields = ["Cookie": "session=\(index % 2 == 0 ? "alice" : "bob")"]
                    return (try? await client.execute(HTTPClientRequest(url: url, headers: headers)))?.status ?? -1
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(identities.allSatisfy { $0 == 200 })
        #expect(upstream.requests.count == 2, "alice and bob never share a flight")
        gateway.stop()

        let roles = gateway.accessLog.compactMap { $0["coalesced"] as? String }
        #expect(roles.filter { $0 == "leader" }.count == 3, "one leader per upstream call: \(roles)")
        #expect(roles.filter { $0 == "follower" }.count == 8)
        let warnings = gateway.stdout.split(separator: "\n").filter { $0.contains("marked unshareable") }
        #expect(warnings.count == 8, "one line per follower")
        #expect(
            warnings.allSatisfy { $0.contains("Set-Cookie") && $0.contains("\"route\":\"api\"") },
            "\(warnings.first ?? "")")
        #expect(!gateway.stdout.contains("cookie-canary"), "the cookie itself is never logged")
    }

    /// COAL-07: a large shared answer is held once, not once per caller (over HTTP/1.1 and HTTP/2, cleartext and TLS),
    /// and a follower that does not read holds nobody else up. Each transport on a fresh gateway, whose peak RSS is
    /// compared before and after.
    @Test(arguments: ["HTTP/1.1", "h2c", "HTTP/1.1 over TLS", "h2 over TLS"])
    func aLargeSharedAnswerIsHeldOnceAndASlowFollowerHoldsNobodyUp(transport: String) async throws {
        let upstream = try await RecordingUpstream.start()
        let directory = ProcessRunner.temporaryDirectory("gateway-coalesce-large")
        let files = try ProcessRunner.makeCertificates(in: directory)
        let tlsPort = try freeLoopbackPort()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  tls: { listen: ["127.0.0.1:\(tlsPort)"], certificate: \(files.cert), private_key: \(files.key) }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  api: { base_url: "http://127.0.0.1:\(upstream.port)", pool: { max_connections: 64 } }
                routes:
                  - { name: api, match: { path_prefix: /api }, upstream: api, rewrite: { strip_prefix: /api }, coalesce: true }
                """)
        func peakRSS() -> Int { ProcessMemory.peakResident(gateway.process.processIdentifier) }
        var configuration = HTTPClient.Configuration()
        configuration.tls = TLSClientConfiguration(caFile: files.ca)
        if transport.hasPrefix("h2") { configuration.http2 = .always }
        let client = HTTPClient(configuration: configuration)
        let base = transport.hasSuffix("TLS") ? "https://localhost:\(tlsPort)" : gateway.url
        let bytes = 8 << 20
        let path = "/api/big?mb=\(bytes >> 20)"
        let before = peakRSS()
        // A follower that sends its request and never reads.
        let stalled = try RawClient(port: gateway.port)
        stalled.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
        let started = ContinuousClock.now
        let sizes = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    (try? await client.execute(HTTPClientRequest(url: "\(base)\(path)")))?.body.count ?? -1
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(sizes == Array(repeating: bytes, count: 4), "\(sizes)")
        #expect(
            ContinuousClock.now - started < Slowdown.scaled(.seconds(20)), "the stalled follower held the others up")
        let grown = peakRSS() - before
        // Five callers: five copies before (the body copied into each connection's head buffer, each HTTP/2 stream's
        // queue, or encrypted whole per TLS connection).
        #expect(grown < 3 * bytes, "peak RSS grew \(grown >> 20) MiB for five callers of one \(bytes >> 20) MiB answer")
        #expect(upstream.requests.count == 1, "one upstream call")
        close(stalled.fd)
        gateway.stop()
    }
}
