import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// `upstreams.X.servers` through the real binary: requests take the listed servers in turn, each is sent with the base
/// URL's host in `Host`, and a server that refuses connections is passed over (a POST too: nothing was sent).
@Suite(.serialized) struct GatewayUpstreamServersTests {
    static func config(host: String, servers: [Int]) -> String {
        let list = servers.map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", ")
        return """
            \(GatewayProcess.listeners)
            upstreams:
              users: { base_url: "http://\(host)/v1", servers: [\(list)], timeout: { connect: 1s, response: 2s } }
            routes:
              - { name: users, match: { path_prefix: /api }, upstream: users, rewrite: { strip_prefix: /api } }
            """
    }

    @Test func requestsTakeTheServersInTurnWithTheBaseURLsHost() async throws {
        let first = try await RecordingUpstream.start()
        let second = try await RecordingUpstream.start()
        // A host name that resolves nowhere: with `servers`, nothing is resolved.
        let gateway = try await GatewayProcess(
            config: Self.config(
                host: "users.invalid:8080",
                servers: [first.port, second.port]))
        let client = HTTPClient()
        for index in 0..<6 {
            let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/users/\(index)"))
            #expect(response.status == 200, "request \(index)")
        }
        #expect(first.requests.count == 3 && second.requests.count == 3)
        let received = first.requests + second.requests
        #expect(Set(received.map(\.head.target)) == Set((0..<6).map { "/v1/users/\($0)" }))
        #expect(received.allSatisfy { $0.head.headers.first(name: "Host") == "users.invalid:8080" })
        let routes = try CheckCommandTests.run(["routes", "--config", gateway.configPath])
        let servers = "127.0.0.1:\(first.port),127.0.0.1:\(second.port)"
        #expect(routes.stdout.contains("users (http://users.invalid:8080/v1 via \(servers))"), "\(routes.stdout)")
    }

    @Test func aServerThatRefusesIsPassedOverEvenForAPost() async throws {
        let live = try await RecordingUpstream.start()
        let dead = try freeLoopbackPort()
        let gateway = try await GatewayProcess(config: Self.config(host: "users.invalid", servers: [dead, live.port]))
        let client = HTTPClient()
        for index in 0..<4 {
            let request = try HTTPClientRequest(
                method: .post, url: "\(gateway.url)/api/orders/\(index)",
                body: .bytes(Array("order \(index)".utf8)))
            let response = try await client.execute(request)
            #expect(response.status == 200, "request \(index)")
        }
        #expect(live.requests.map { String(decoding: $0.body, as: UTF8.self) } == (0..<4).map { "order \($0)" })
    }
}
