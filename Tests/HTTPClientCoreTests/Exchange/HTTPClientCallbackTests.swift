import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// `HTTPClient.start`: the exchange started from the client's loop, answered by callback there (collected, or
/// streamed past a threshold), cancellable, and refused (nil) off the client's loops.
@Suite(.serialized) struct HTTPClientCallbackTests {
    /// `/hello`, `/big` (64 KiB), `/slow?ms=N`.
    private struct Routes: HTTPServerHandler {
        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            switch String(request.head.path) {
            case "/hello": return HTTPServerResponse(status: 200, body: Array("hello".utf8))
            case "/big": return HTTPServerResponse(status: 200, body: [UInt8](repeating: 0x61, count: 64 * 1024))
            case "/slow":
                let ms = Int(request.head.query?.split(separator: "=").last ?? "100") ?? 100
                try? await Task.sleep(for: .milliseconds(ms))
                return HTTPServerResponse(status: 200, body: Array("slow".utf8))
            default: return HTTPServerResponse(status: 404, body: [])
            }
        }
    }

    /// What a callback saw: its result, whether it ran on the loop, and whether `start` had returned by then.
    private struct Seen: @unchecked Sendable {
        var result: Result<HTTPClientResponseOrStream, HTTPClientError>
        var onLoop: Bool
        var afterStart: Bool
    }

    private static func startServer() async throws -> (HTTPServer, Int) {
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]), group: group,
            handler: Routes())
        try await server.start()
        return (server, server.localAddresses[0].port)
    }

    /// Starts `request` on `client`'s loop and waits for its callback; `cancelAfter` cancels it that much later.
    private static func call(
        _ request: HTTPClientRequest, on client: HTTPClient, threshold: Int? = nil, cancelAfter: Duration? = nil
    ) async -> Seen? {
        let loop = client.group.loops[0]
        return await withCheckedContinuation { (continuation: CheckedContinuation<Seen?, Never>) in
            loop.execute {
                let returned = Locked(false)
                let started = client.start(request, streamingBodiesLongerThan: threshold) { result in
                    continuation.resume(
                        returning: Seen(
                            result: result, onLoop: loop.inEventLoop, afterStart: returned.withLock { $0 }))
                }
                returned.withLock { $0 = true }
                guard let started else { return continuation.resume(returning: nil) }
                if let cancelAfter { _ = loop.schedule(after: cancelAfter) { started.cancel() } }
            }
        }
    }

    @Test func aResponseComesBackByCallbackOnTheLoopAfterStartReturned() async throws {
        let (server, port) = try await Self.startServer()
        let client = HTTPClient(group: try EventLoopGroup(threads: 1))
        for round in 1...2 {
            let seen = try #require(
                await Self.call(try HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello"), on: client))
            #expect(seen.onLoop && seen.afterStart, "round \(round)")
            guard case .success(.collected(let response)) = seen.result else {
                Issue.record("round \(round): \(seen.result)")
                continue
            }
            #expect(response.status == 200 && response.body == Array("hello".utf8))
            #expect((response.timings.connect == nil) == (round == 2), "the second request reuses the connection")
        }
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func aBodyPastTheThresholdIsStreamedAndAShortOneCollected() async throws {
        let (server, port) = try await Self.startServer()
        let client = HTTPClient(group: try EventLoopGroup(threads: 1))
        let big = try #require(
            await Self.call(try HTTPClientRequest(url: "http://127.0.0.1:\(port)/big"), on: client, threshold: 1024))
        guard case .success(.streamed(let streamed)) = big.result else {
            Issue.record("\(big.result)")
            return
        }
        #expect(try await streamed.body.collect(upTo: 1 << 20).count == 64 * 1024)
        let short = try #require(
            await Self.call(try HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello"), on: client, threshold: 1024))
        guard case .success(.collected(let response)) = short.result else {
            Issue.record("\(short.result)")
            return
        }
        #expect(response.body == Array("hello".utf8))
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func cancellingTheCallEndsItWithTheCancellationError() async throws {
        let (server, port) = try await Self.startServer()
        let client = HTTPClient(group: try EventLoopGroup(threads: 1))
        let started = ContinuousClock.now
        let seen = try #require(
            await Self.call(
                try HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow?ms=3000"), on: client,
                cancelAfter: .milliseconds(100)))
        guard case .failure(let error) = seen.result else {
            Issue.record("\(seen.result)")
            return
        }
        #expect(error == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(2))
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func offTheClientsLoopsNothingStarts() async throws {
        let (server, port) = try await Self.startServer()
        let client = HTTPClient(group: try EventLoopGroup(threads: 1))
        let called = Locked(false)
        let started = client.start(try HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello")) { _ in
            called.withLock { $0 = true }
        }
        #expect(started == nil)
        try await Task.sleep(for: .milliseconds(50))
        #expect(!called.withLock { $0 })
        await server.shutdown(timeout: .seconds(1))
    }
}
