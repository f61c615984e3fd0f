import Foundation
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// A handler streaming up to 10,000 chunks of 16 KiB of incompressible bytes, produced only on demand; it keeps the
/// body's source stream weakly so a test can see whether the server let go of it.
final class OnDemandSource: HTTPServerHandler {
    private struct State {
        weak var source: ByteStream?
        var produced = 0
    }

    private let state = Locked(State())
    let demand: AsyncStream<Void>
    private let demandContinuation: AsyncStream<Void>.Continuation

    init() {
        (demand, demandContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    var produced: Int { state.withLock { $0.produced } }
    var sourceIsAlive: Bool { state.withLock { $0.source != nil } }
    /// Ends the producer (it is waiting for demand that will not come).
    func stop() { demandContinuation.finish() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let continuation = demandContinuation
        let source = ByteStream(highWaterMark: 64 * 1024, lowWaterMark: 16 * 1024, onDemand: { continuation.yield() })
        state.withLock { $0.source = source }
        let demand = demand
        Task { [weak source, self] in
            var generator = SystemRandomNumberGenerator()
            var waiting = demand.makeAsyncIterator()
            for _ in 0..<10_000 {
                let chunk = (0..<(16 * 1024 / 8)).flatMap { _ in
                    withUnsafeBytes(of: generator.next() as UInt64) { Array($0) }
                }
                guard let accepted = source?.yield(chunk) else { return }
                self.state.withLock { $0.produced += 1 }
                if !accepted, await waiting.next() == nil { return }
            }
            source?.finish()
        }
        return HTTPServerResponse(
            head: HTTPResponseHead(status: 200, headers: ["Content-Type": "text/plain"]),
            body: .stream(source))
    }
}

/// A compressed streamed response whose client goes away: the server stops compressing and releases the handler's
/// stream instead of waiting for demand forever.
@Suite(.serialized) struct CompressionAbandonTests {
    @Test func clientGoingAwayReleasesTheCompressedStream() async throws {
        let handler = OnDemandSource()
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(
                listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!],
                compression: CompressionPolicy()),
            group: group, handler: handler)
        try await server.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        var client: RawClient? = try RawClient(port: server.localAddresses[0].port)
        client?.send("GET /endless HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
        let head = client?.read(until: { $0.contains("\r\n\r\n") }, timeout: 5) ?? ""
        #expect(head.contains("Content-Encoding: gzip"))
        // Not reading: the socket fills, back-pressure pauses the producer well before its 10,000 chunks.
        for _ in 0..<50 where handler.produced < 50 { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(200))
        let paused = handler.produced
        #expect(paused > 0 && paused < 10_000)
        client = nil
        for _ in 0..<100 where handler.sourceIsAlive { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!handler.sourceIsAlive, "the server still holds the body after the client left")
        #expect(handler.produced < 10_000)
        handler.stop()
    }
}
