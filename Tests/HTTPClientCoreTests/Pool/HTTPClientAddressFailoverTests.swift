import HTTPServerCore
import HTTPWire
import NetCore
import Synchronization
import TestSupport
import Testing

@testable import HTTPClientCore

/// A host name with several addresses: new connections take them in turn; a connection that could not be made
/// (refused, or no answer within the connect timeout) sent nothing, so the exchange (a POST too) goes on to another
/// address, over HTTP/1.1 and HTTP/2 alike, and the failed address is passed over for a while; only when every address
/// fails does the exchange fail.
@Suite(.serialized) struct HTTPClientAddressFailoverTests {
    /// Counts requests and answers with the body's size and the `Host` it was sent to, after `delay`.
    private final class CountingHandler: HTTPServerHandler {
        let requests = Atomic<Int>(0)
        let delay: Duration
        init(delay: Duration = .zero) { self.delay = delay }
        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            let body = (try? await request.body.collect(upTo: 1 << 20)) ?? []
            requests.add(1, ordering: .relaxed)
            if delay > .zero { try? await Task.sleep(for: delay) }
            return HTTPServerResponse(
                status: 200, body: Array("got \(body.count) for \(request.head.headers.first(name: "Host") ?? "")".utf8)
            )
        }
    }

    private static func address(_ port: Int) -> SocketAddress { SocketAddress(numericHost: "127.0.0.1", port: port)! }

    /// Started servers, one per handler, on one loop.
    private static func servers(for handlers: [CountingHandler], http2: Bool = false) async throws -> [HTTPServer] {
        let group = try EventLoopGroup(threads: 1)
        var servers: [HTTPServer] = []
        for handler in handlers {
            let server = HTTPServer(
                configuration: .init(listen: [address(0)], http2: http2), group: group,
                handler: handler)
            try await server.start()
            servers.append(server)
        }
        return servers
    }

    @Test func aRefusedAddressPassesTheExchangeToTheNextOne() async throws {
        let group = try EventLoopGroup(threads: 1)
        let handler = CountingHandler()
        let server = HTTPServer(configuration: .init(listen: [Self.address(0)]), group: group, handler: handler)
        try await server.start()
        let live = server.localAddresses[0].port
        let dead = try freeLoopbackPort()
        let resolutions = Atomic<Int>(0)
        var configuration = HTTPClient.Configuration()
        configuration.idleTimeout = .milliseconds(1)
        let client = HTTPClient(configuration: configuration, group: nil) { _, _ in
            resolutions.add(1, ordering: .relaxed)
            return [Self.address(dead), Self.address(live)]
        }
        for round in 0..<3 {
            let request = try HTTPClientRequest(
                method: .post, url: "http://multi.internal:\(live)/upload",
                body: .bytes(Array("payload".utf8)))
            let response = try await client.execute(request)
            #expect(response.status == 200, "round \(round)")
            #expect(String(decoding: response.body, as: UTF8.self) == "got 7 for multi.internal:\(live)")
            // Idle connections expire at once, so each round opens a new one: to the address that worked.
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(handler.requests.load(ordering: .relaxed) == 3)
        #expect(resolutions.load(ordering: .relaxed) == 1)
        client.shutdown()
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func newConnectionsTakeTheAddressesInTurn() async throws {
        // Slow answers: every request is still in flight when the next one needs a connection.
        let handlers = [CountingHandler(delay: .milliseconds(200)), CountingHandler(delay: .milliseconds(200))]
        let servers = try await Self.servers(for: handlers)
        let ports = servers.map { $0.localAddresses[0].port }
        let client = HTTPClient(configuration: HTTPClient.Configuration(), group: nil) { _, _ in
            ports.map(Self.address)
        }
        // Eight at once need eight connections: four to each address, and the requests on them alike.
        try await withThrowingTaskGroup(of: Int.self) { requests in
            for index in 0..<8 {
                requests.addTask {
                    let url = "http://multi.internal:\(ports[0])/\(index)"
                    return try await client.execute(try HTTPClientRequest(url: url)).status
                }
            }
            for try await status in requests { #expect(status == 200) }
        }
        #expect(handlers.map { $0.requests.load(ordering: .relaxed) } == [4, 4])
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }

    /// Over HTTP/1.1 (kept connections) and HTTP/2 (h2c) alike.
    @Test(arguments: [false, true])
    func requestsOneAfterAnotherTakeTheAddressesInTurnOnOneConnectionEach(http2: Bool) async throws {
        let handlers = [CountingHandler(), CountingHandler()]
        let servers = try await Self.servers(for: handlers, http2: http2)
        let ports = servers.map { $0.localAddresses[0].port }
        var configuration = HTTPClient.Configuration()
        if http2 { configuration.http2 = .always }
        let client = HTTPClient(configuration: configuration, group: nil) { _, _ in ports.map(Self.address) }
        for round in 0..<6 {
            let url = "http://multi.internal:\(ports[0])/\(round)"
            let response = try await client.execute(try HTTPClientRequest(url: url))
            #expect(response.status == 200)
            if http2 { #expect(response.head.version == .http2) }
            #expect(
                handlers.map { $0.requests.load(ordering: .relaxed) } == [round / 2 + 1, (round + 1) / 2],
                "round \(round)")
        }
        // One connection to each address served them all.
        #expect(servers.map(\.openConnections) == [1, 1])
        client.shutdown()
        for server in servers { await server.shutdown(timeout: .seconds(1)) }
    }

    @Test func anAddressThatFailedIsPassedOverForThePause() async throws {
        let group = try EventLoopGroup(threads: 1)
        let handler = CountingHandler(delay: .milliseconds(100))
        let server = HTTPServer(configuration: .init(listen: [Self.address(0)]), group: group, handler: handler)
        try await server.start()
        let live = server.localAddresses[0].port
        let silent = try UnansweredListener()
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = .seconds(3)
        let client = HTTPClient(configuration: configuration, group: nil) { _, _ in
            [Self.address(silent.port), Self.address(live)]
        }
        // The first request waits out the connect timeout at the silent address and moves on. The six new
        // connections opened next all go to the live address: none waits for the timeout again.
        let first = try await client.execute(try HTTPClientRequest(url: "http://multi.internal:\(live)/first"))
        #expect(first.status == 200)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Int.self) { requests in
            for index in 0..<6 {
                requests.addTask {
                    let url = "http://multi.internal:\(live)/\(index)"
                    return try await client.execute(try HTTPClientRequest(url: url)).status
                }
            }
            for try await status in requests { #expect(status == 200) }
        }
        #expect(handler.requests.load(ordering: .relaxed) == 7)
        #expect(ContinuousClock.now - started < .seconds(2), "a request went to the silent address again")
        client.shutdown()
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func anAddressThatNeverAnswersPassesTheExchangeOnAtTheConnectTimeout() async throws {
        let group = try EventLoopGroup(threads: 1)
        let handler = CountingHandler()
        let server = HTTPServer(configuration: .init(listen: [Self.address(0)]), group: group, handler: handler)
        try await server.start()
        let live = server.localAddresses[0].port
        let silent = try UnansweredListener()
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = .milliseconds(300)
        let client = HTTPClient(configuration: configuration, group: nil) { _, _ in
            [Self.address(silent.port), Self.address(live)]
        }
        let request = try HTTPClientRequest(
            method: .post, url: "http://multi.internal:\(live)/upload",
            body: .bytes(Array("payload".utf8)))
        let response = try await client.execute(request)
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "got 7 for multi.internal:\(live)")
        #expect(handler.requests.load(ordering: .relaxed) == 1)
        client.shutdown()
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func whenEveryAddressTimesOutTheExchangeFailsWithTheTimeout() async throws {
        let first = try UnansweredListener()
        let second = try UnansweredListener()
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = .milliseconds(200)
        let client = HTTPClient(configuration: configuration, group: nil) { _, _ in
            [Self.address(first.port), Self.address(second.port)]
        }
        await #expect(throws: HTTPClientError.connectTimeout) {
            _ = try await client.execute(try HTTPClientRequest(url: "http://multi.internal:\(first.port)/"))
        }
        client.shutdown()
    }

    @Test func anHTTP2OnlyPoolFailsOverToo() async throws {
        let group = try EventLoopGroup(threads: 1)
        let handler = CountingHandler()
        let server = HTTPServer(
            configuration: .init(listen: [Self.address(0)], http2: true), group: group, handler: handler)
        try await server.start()
        let live = server.localAddresses[0].port
        let dead = try freeLoopbackPort()
        let silent = try UnansweredListener()
        var configuration = HTTPClient.Configuration()
        configuration.http2 = .always
        configuration.connectTimeout = .milliseconds(300)
        let client = HTTPClient(configuration: configuration, group: nil) { _, _ in
            [Self.address(dead), Self.address(silent.port), Self.address(live)]
        }
        // Several at once: they all wait on the first connection, and all move on with it.
        try await withThrowingTaskGroup(of: String.self) { requests in
            for index in 0..<3 {
                requests.addTask {
                    let request = try HTTPClientRequest(
                        method: .post, url: "http://multi.internal:\(live)/\(index)",
                        body: .bytes(Array(repeating: 0x61, count: index + 1)))
                    let response = try await client.execute(request)
                    #expect(response.head.version == .http2)
                    return String(decoding: response.body, as: UTF8.self)
                }
            }
            var bodies: [String] = []
            for try await body in requests { bodies.append(body) }
            #expect(bodies.sorted() == (1...3).map { "got \($0) for multi.internal:\(live)" })
        }
        #expect(handler.requests.load(ordering: .relaxed) == 3)
        client.shutdown()
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func whenEveryAddressRefusesTheExchangeFailsOnce() async throws {
        let first = try freeLoopbackPort()
        let second = try freeLoopbackPort()
        let client = HTTPClient(configuration: HTTPClient.Configuration(), group: nil) { _, _ in
            [Self.address(first), Self.address(second)]
        }
        await #expect {
            _ = try await client.execute(try HTTPClientRequest(method: .post, url: "http://multi.internal:\(first)/"))
        } throws: { error in
            guard case .connectFailed = error as? HTTPClientError else { return false }
            return true
        }
        client.shutdown()
    }
}
