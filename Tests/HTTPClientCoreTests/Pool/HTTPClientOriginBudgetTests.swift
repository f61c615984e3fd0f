import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import Testing

/// `maxConnectionsPerOriginTotal` caps the connections to an origin across all of the client's loops: requests made
/// on two loops at once never hold more than the cap, and every one of them is still served.
@Suite(.serialized) struct HTTPClientOriginBudgetTests {
    /// Answers after 100 ms and records the most requests it had in flight at once (one per connection over HTTP/1.1).
    final class PeakServer: HTTPServerHandler {
        private let state = Locked((inFlight: 0, peak: 0))
        var peak: Int { state.withLock { $0.peak } }

        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            state.withLock { state in
                state.inFlight += 1
                state.peak = max(state.peak, state.inFlight)
            }
            try? await Task.sleep(for: .milliseconds(100))
            state.withLock { $0.inFlight -= 1 }
            return HTTPServerResponse(status: 200, body: Array("ok".utf8))
        }
    }

    /// Sends `count` requests at once, alternating between the client's two loops; returns the statuses and the
    /// server's peak of requests in flight.
    private func burst(total: Int?, count: Int = 24) async throws -> (statuses: [Int], peak: Int) {
        let handler = PeakServer()
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: handler)
        try await server.start()
        let base = "http://127.0.0.1:\(server.localAddresses[0].port)"
        let group = try EventLoopGroup(threads: 2)
        var configuration = HTTPClient.Configuration()
        configuration.http2 = .never
        configuration.maxConnectionsPerOrigin = 2
        configuration.maxConnectionsPerOriginTotal = total
        configuration.maxWaitTime = .seconds(10)
        let client = HTTPClient(configuration: configuration, group: group)
        let statuses = await withTaskGroup(of: Int.self) { tasks in
            for index in 0..<count {
                tasks.addTask(executorPreference: group.loops[index % 2]) {
                    (try? await client.execute(HTTPClientRequest(url: "\(base)/x"))).map(\.status) ?? -1
                }
            }
            return await tasks.reduce(into: []) { $0.append($1) }
        }
        client.shutdown()
        await server.shutdown(timeout: .seconds(1))
        group.shutdown()
        return (statuses, handler.peak)
    }

    @Test func connectionsToAnOriginStayUnderTheCapAcrossLoops() async throws {
        let capped = try await burst(total: 2)
        #expect(capped.statuses.count == 24 && capped.statuses.allSatisfy { $0 == 200 }, "\(capped.statuses)")
        #expect(capped.peak == 2, "never more than 2 at once across both loops, and both used: \(capped.peak)")
        // Without the client-wide cap, each loop opens its own 2.
        let perLoop = try await burst(total: nil)
        #expect(perLoop.statuses.allSatisfy { $0 == 200 })
        #expect(perLoop.peak == 4, "\(perLoop.peak)")
    }
}
