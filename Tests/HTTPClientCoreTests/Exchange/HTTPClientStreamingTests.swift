import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import Synchronization
import Testing

/// Opens once the consumer of a ``ByteStream`` wants more; a producer that was told to pause waits on it.
private final class DemandGate: Sendable {
    private let state = Locked<(signalled: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func open() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.signalled {
                    state.signalled = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// /big: a chunked body of `chunks` x 64 KiB (every byte of chunk i is `i % 251`), produced only as fast as the
/// connection takes it; `produced` counts the bytes handed to the server so far.
private struct BigBody: HTTPServerHandler {
    static let chunk = 64 * 1024
    let chunks: Int
    let produced: AtomicCounter

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let gate = DemandGate()
        let stream = ByteStream { gate.open() }
        let chunks = self.chunks
        let produced = self.produced
        Task {
            for index in 0..<chunks {
                let bytes = [UInt8](repeating: UInt8(index % 251), count: BigBody.chunk)
                produced.add(bytes.count)
                if !stream.yield(bytes) { await gate.wait() }
            }
            stream.finish()
        }
        return HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(stream))
    }
}

@Suite(.serialized) struct HTTPClientStreamingTests {
    /// Streams a 64 MiB chunked body over HTTP/1.1 and over h2c: while the reader stalls, the server stops producing
    /// well short of the whole body; then every byte arrives in order.
    @Test(arguments: [HTTPClient.Configuration.HTTP2Mode.never, .always])
    func largeChunkedBodyStreamsWithBackPressure(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        let chunks = 1024
        let total = chunks * BigBody.chunk
        let produced = AtomicCounter()
        let handler = BigBody(chunks: chunks, produced: produced)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: handler)
        try await server.start()
        var configuration = HTTPClient.Configuration()
        configuration.http2 = mode
        let client = HTTPClient(configuration: configuration)
        let url = "http://127.0.0.1:\(server.localAddresses[0].port)/big"
        let response = try await client.execute(streaming: HTTPClientRequest(url: url))
        #expect(response.status == 200)
        #expect(response.head.version == (mode == .always ? .http2 : .http1_1))
        var iterator = response.body.makeAsyncIterator()
        var received = 0
        var inOrder = true
        func check(_ chunk: [UInt8]) {
            // First and last byte of each piece against the chunk they must come from (cheap enough for 64 MiB).
            let last = received + chunk.count - 1
            if chunk.first != UInt8(received / BigBody.chunk % 251) || chunk.last != UInt8(last / BigBody.chunk % 251) {
                inOrder = false
            }
            received += chunk.count
        }
        if let first = try await iterator.next() { check(first) }
        try await Task.sleep(for: .milliseconds(500))
        let producedWhileStalled = produced.value
        #expect(producedWhileStalled < total / 2, "back-pressure: \(producedWhileStalled) of \(total) bytes produced")
        while let chunk = try await iterator.next() { check(chunk) }
        #expect(received == total)
        #expect(inOrder)
        let again = try await client.execute(HTTPClientRequest(url: url))
        #expect(again.body.count == total, "the connection is reusable after a streamed body")
        #expect(again.timings.connect == nil)
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func cancellingAStreamedBodyEndsItAndTheClientGoesOn() async throws {
        let produced = AtomicCounter()
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: BigBody(chunks: 1024, produced: produced))
        try await server.start()
        for mode in [HTTPClient.Configuration.HTTP2Mode.never, .always] {
            var configuration = HTTPClient.Configuration()
            configuration.http2 = mode
            let client = HTTPClient(configuration: configuration)
            let url = "http://127.0.0.1:\(server.localAddresses[0].port)/big"
            let response = try await client.execute(streaming: HTTPClientRequest(url: url))
            var iterator = response.body.makeAsyncIterator()
            _ = try await iterator.next()
            response.cancel()
            await #expect(throws: HTTPClientError.cancelled) {
                while try await iterator.next() != nil {}
            }
            let again = try await client.execute(streaming: HTTPClientRequest(url: url))
            var count = 0
            for try await chunk in again.body { count += chunk.count }
            #expect(count == 1024 * BigBody.chunk, "\(mode)")
        }
        await server.shutdown(timeout: .seconds(1))
    }

    /// A caller that lets go of its client while it reads a streamed body (the gateway's reload drops the old
    /// configuration's client) still gets the whole body: the response keeps the client, and so its connection.
    @Test func releasingTheClientDoesNotCutAStreamedBody() async throws {
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: BigBody(chunks: 256, produced: AtomicCounter()))
        try await server.start()
        for mode in [HTTPClient.Configuration.HTTP2Mode.never, .always] {
            var configuration = HTTPClient.Configuration()
            configuration.http2 = mode
            var client: HTTPClient? = HTTPClient(configuration: configuration)
            weak let released = client
            let url = "http://127.0.0.1:\(server.localAddresses[0].port)/big"
            let response = try await #require(client).execute(streaming: HTTPClientRequest(url: url))
            client = nil
            var count = 0
            for try await chunk in response.body { count += chunk.count }
            #expect(count == 256 * BigBody.chunk, "\(mode)")
            #expect(released != nil, "the response still holds its client")
            _ = response
        }
        await server.shutdown(timeout: .seconds(1))
    }
}
