import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import Synchronization
import TestSupport
import Testing

@testable import HTTPClientCore

/// `Configuration.servers` with host names: each name is resolved once per time-to-live (never the request's own
/// host, which is still sent in `Host`), requests take the addresses in turn, a name that does not resolve is left
/// out, and a list past its time-to-live is resolved again in the background while requests use the last good one
/// (as a request host's own name is, without `servers`).
/// Addresses that leave a list (or a request host's resolution) get no more requests on kept connections.
@Suite(.serialized) struct HTTPClientServerListTests {
    /// Counts requests and answers with its name.
    private final class NamedHandler: HTTPServerHandler {
        let name: String
        let requests = Atomic<Int>(0)
        init(_ name: String) { self.name = name }
        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            requests.add(1, ordering: .relaxed)
            let host = request.head.headers.first(name: "Host") ?? ""
            return HTTPServerResponse(status: 200, body: Array("\(name) for \(host)".utf8))
        }
    }

    /// A resolver from a table that can change, counting the lookups of each name.
    private final class Names: Sendable {
        private let table: Locked<[String: [SocketAddress]]>
        private let lookups = Locked<[String: Int]>([:])
        init(_ table: [String: [SocketAddress]]) { self.table = Locked(table) }
        func set(_ name: String, _ addresses: [SocketAddress]?) { table.withLock { $0[name] = addresses } }
        func count(_ name: String) -> Int { lookups.withLock { $0[name] ?? 0 } }
        func resolve(_ host: String, _ port: Int) throws -> [SocketAddress] {
            lookups.withLock { $0[host, default: 0] += 1 }
            guard let addresses = table.withLock({ $0[host] }) else {
                throw SystemError("no such name \(host)", errno: 0)
            }
            return addresses
        }
    }

    private static func address(_ port: Int) -> SocketAddress { SocketAddress(numericHost: "127.0.0.1", port: port)! }

    private static func servers(_ names: [String]) async throws -> ([HTTPServer], [NamedHandler]) {
        let group = try EventLoopGroup(threads: 1)
        var servers: [HTTPServer] = []
        let handlers = names.map(NamedHandler.init)
        for handler in handlers {
            let server = HTTPServer(configuration: .init(listen: [address(0)]), group: group, handler: handler)
            try await server.start()
            servers.append(server)
        }
        return (servers, handlers)
    }

    private static func client(
        servers: [String], port: Int = 80, ttl: Duration = .seconds(30),
        names: Names
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.servers = servers.map { .init(host: $0, port: port) }
        configuration.nameResolutionTTL = ttl
        return HTTPClient(configuration: configuration, group: nil) { host, port in try names.resolve(host, port) }
    }

    private static func get(_ client: HTTPClient) async throws -> String {
        let response = try await client.execute(try HTTPClientRequest(url: "http://api.internal:8080/x"))
        #expect(response.status == 200)
        return String(decoding: response.body, as: UTF8.self)
    }

    @Test func namedServersAreResolvedOnceAndTakeTurns() async throws {
        let (servers, handlers) = try await Self.servers(["a", "b"])
        let names = Names([
            "one.internal": [Self.address(servers[0].localAddresses[0].port)],
            "two.internal": [Self.address(servers[1].localAddresses[0].port)]
        ])
        let client = Self.client(servers: ["one.internal", "two.internal"], names: names)
        var answers: [String] = []
        for _ in 0..<6 { answers.append(try await Self.get(client)) }
        #expect(answers == ["a", "b", "a", "b", "a", "b"].map { "\($0) for api.internal:8080" })
        #expect(handlers.map { $0.requests.load(ordering: .relaxed) } == [3, 3])
        #expect(names.count("one.internal") == 1)
        #expect(names.count("two.internal") == 1)
        #expect(names.count("api.internal") == 0)
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }

    @Test func aNameThatDoesNotResolveIsLeftOutUntilTheListExpires() async throws {
        let (servers, handlers) = try await Self.servers(["a"])
        let names = Names(["one.internal": [Self.address(servers[0].localAddresses[0].port)]])
        let client = Self.client(servers: ["gone.internal", "one.internal"], names: names)
        for _ in 0..<4 { #expect(try await Self.get(client) == "a for api.internal:8080") }
        #expect(handlers[0].requests.load(ordering: .relaxed) == 4)
        // Looked up once with the list, not once per request.
        #expect(names.count("gone.internal") == 1)
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }

    @Test func whenNoNameResolvesTheRequestFailsAndTheNextOneTriesAgain() async throws {
        let names = Names([:])
        let client = Self.client(servers: ["gone.internal", "lost.internal"], names: names)
        for attempt in 1...2 {
            await #expect(throws: HTTPClientError.nameResolutionFailed(host: "gone.internal:80, lost.internal:80")) {
                _ = try await Self.get(client)
            }
            #expect(names.count("gone.internal") == attempt)
            #expect(names.count("lost.internal") == attempt)
        }
        client.shutdown()
    }

    @Test func anExpiredListIsResolvedAgainWhileRequestsUseTheLastGoodOne() async throws {
        let (servers, handlers) = try await Self.servers(["a", "b"])
        let ports = servers.map { $0.localAddresses[0].port }
        let names = Names(["svc.internal": [Self.address(ports[0])]])
        let client = Self.client(servers: ["svc.internal"], ttl: .milliseconds(200), names: names)
        #expect(try await Self.get(client) == "a for api.internal:8080")
        // The instance behind the name changes. Past the time-to-live the next request still goes to the list it has
        // (and starts a lookup); once the lookup is back, requests go to the new address, and the idle connection to
        // the old one is closed rather than reused.
        names.set("svc.internal", [Self.address(ports[1])])
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.get(client) == "a for api.internal:8080")
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await Self.get(client) == "b for api.internal:8080")
        #expect(names.count("svc.internal") == 2)
        try await Task.sleep(for: .milliseconds(100))
        #expect(servers[0].openConnections == 0)
        // The name stops resolving: the last good list stays.
        names.set("svc.internal", nil)
        try await Task.sleep(for: .milliseconds(300))
        for _ in 0..<3 {
            #expect(try await Self.get(client) == "b for api.internal:8080")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(names.count("svc.internal") >= 3)
        #expect(handlers.map { $0.requests.load(ordering: .relaxed) } == [2, 4])
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }

    /// Without `servers`, the request's own host name, the same way: past its time-to-live it is resolved again in
    /// the background while requests go to the last good address; when it resolves elsewhere, the kept connection to
    /// its old address is closed, not reused; when it stops resolving, the last good address stays.
    @Test func aRequestHostThatMovedGetsNoMoreRequestsAtItsOldAddress() async throws {
        let (servers, handlers) = try await Self.servers(["a", "b"])
        let ports = servers.map { $0.localAddresses[0].port }
        let names = Names(["api.internal": [Self.address(ports[0])]])
        var configuration = HTTPClient.Configuration()
        configuration.nameResolutionTTL = .milliseconds(200)
        let client = HTTPClient(configuration: configuration, group: nil) { host, port in try names.resolve(host, port)
        }
        #expect(try await Self.get(client) == "a for api.internal:8080")
        names.set("api.internal", [Self.address(ports[1])])
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.get(client) == "a for api.internal:8080")
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await Self.get(client) == "b for api.internal:8080")
        #expect(names.count("api.internal") >= 2)
        try await Task.sleep(for: .milliseconds(100))
        #expect(servers[0].openConnections == 0)
        names.set("api.internal", nil)
        try await Task.sleep(for: .milliseconds(300))
        for _ in 0..<3 {
            #expect(try await Self.get(client) == "b for api.internal:8080")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(names.count("api.internal") >= 3)
        #expect(handlers.map { $0.requests.load(ordering: .relaxed) } == [2, 4])
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }

    @Test func numericServersAreNeverResolved() async throws {
        let (servers, handlers) = try await Self.servers(["a", "b"])
        let names = Names([:])
        var configuration = HTTPClient.Configuration()
        configuration.servers =
            servers.map { .init(host: "127.0.0.1", port: $0.localAddresses[0].port) }
            + [.init(host: "localhost", port: servers[0].localAddresses[0].port)]
        let client = HTTPClient(configuration: configuration, group: nil) { host, port in try names.resolve(host, port)
        }
        for _ in 0..<4 { _ = try await Self.get(client) }
        // localhost is 127.0.0.1: the same address as the first, listed once.
        #expect(handlers.map { $0.requests.load(ordering: .relaxed) } == [2, 2])
        #expect(names.count("localhost") == 0)
        #expect(names.count("api.internal") == 0)
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }
}
