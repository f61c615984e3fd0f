@testable import HTTPClient
import HTTPServer
import HTTPWire
import NetCore
import Synchronization
import TestSupport
import Testing

/// A host name with several addresses: a connection that could not be made (refused, or no answer within the connect
/// timeout) sent nothing, so the exchange (a POST too) goes on to the next address, over HTTP/1.1 and HTTP/2 alike;
/// only when every address fails does it fail.
@Suite(.serialized) struct HTTPClientAddressFailoverTests {
    /// Counts requests and answers with the body's size and the `Host` it was sent to.
    private final class CountingHandler: HTTPServerHandler {
        let requests = Atomic<Int>(0)
        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            let body = (try? await request.body.collect(upTo: 1 << 20)) ?? []
            requests.add(1, ordering: .relaxed)
            return HTTPServerResponse(status: 200, body: Array("got \(body.count) for \(request.head.headers.first(name: "Host") ?? "")".utf8))
        }
    }

    private static func address(_ port: Int) -> SocketAddress { SocketAddress(numericHost: "127.0.0.1", port: port)! }

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
            let request = try HTTPClientRequest(method: .post, url: "http://multi.internal:\(live)/upload",
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
        let request = try HTTPClientRequest(method: .post, url: "http://multi.internal:\(live)/upload",
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
        let server = HTTPServer(configuration: .init(listen: [Self.address(0)], http2: true), group: group, handler: handler)
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
                    let request = try HTTPClientRequest(method: .post, url: "http://multi.internal:\(live)/\(index)",
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
