import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import Testing

/// Switches to `echo-test` and sends back every byte after the 101 (upper-cased, so an echo cannot be mistaken for
/// the request); answers 426 to a request for any other protocol; records the upgrade headers it saw.
private struct EchoUpgrade: HTTPServerHandler {
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        if request.head.path == "/switch-elsewhere", request.upgradeInput != nil {
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 101, headers: ["Upgrade": "h2c"]),
                body: .stream(ByteStream.complete([])))
        }
        guard let input = request.upgradeInput, request.head.requestsUpgrade(to: "echo-test") else {
            return HTTPServerResponse(
                status: 426, body: Array("upgrade=\(request.head.headers.first(name: "Upgrade") ?? "-")".utf8))
        }
        let (demand, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let output = ByteStream(onDemand: { signal.yield() })
        Task {
            var demandSignals = demand.makeAsyncIterator()
            do {
                while let chunk = try await input.next() {
                    let upper = chunk.map { (97...122).contains($0) ? $0 - 32 : $0 }
                    if !output.yield(upper) { _ = await demandSignals.next() }
                }
                output.finish()
            } catch {
                output.fail(error)
            }
        }
        return HTTPServerResponse(
            head: HTTPResponseHead(status: 101, headers: ["Upgrade": "echo-test"]), body: .stream(output))
    }
}

@Suite(.serialized) struct HTTPClientUpgradeTests {
    private func startServer() async throws -> (HTTPServer, Int) {
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: EchoUpgrade())
        try await server.start()
        return (server, server.localAddresses[0].port)
    }

    private func upgradeRequest(
        port: Int, to protocolName: String = "echo-test", target: String = "/",
        body: AsyncThrowingStream<[UInt8], any Error>
    ) -> HTTPClientRequest {
        HTTPClientRequest(
            method: .get, scheme: "http", host: "127.0.0.1", port: port, target: target,
            headers: ["Connection": "Upgrade", "Upgrade": protocolName], body: .upgrade(body))
    }

    /// Reads from `body` until `count` bytes have arrived.
    private func read(_ count: Int, from body: ByteStream) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count, let chunk = try await body.next() { bytes += chunk }
        return bytes
    }

    @Test func a101TurnsTheExchangeIntoATunnelThatEndsWithTheCallersStream() async throws {
        let (server, port) = try await startServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        defer { client.shutdown() }
        let (outbound, send) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        // A short deadline bounds the handshake only: the tunnel outlives it.
        let response = try await client.execute(
            streaming: upgradeRequest(port: port, body: outbound),
            timeout: .milliseconds(300))
        #expect(response.status == 101)
        #expect(response.headers.first(name: "Upgrade") == "echo-test")
        send.yield(Array("ping".utf8))
        #expect(try await read(4, from: response.body) == Array("PING".utf8))
        try await Task.sleep(for: .milliseconds(500))
        send.yield(Array("after the deadline".utf8))
        #expect(try await read(18, from: response.body) == Array("AFTER THE DEADLINE".utf8))
        send.finish()
        #expect(try await response.body.next() == nil, "the tunnel ends cleanly when the caller's side does")
    }

    @Test func anotherAnswerIsAnOrdinaryResponseAndTheStreamIsNeverPulled() async throws {
        let (server, port) = try await startServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        defer { client.shutdown() }
        let pulled = AtomicCounter()
        let outbound = AsyncThrowingStream<[UInt8], any Error>(unfolding: {
            _ = pulled.add(1)
            return nil
        })
        let response = try await client.execute(upgradeRequest(port: port, to: "other", body: outbound))
        #expect(response.status == 426)
        #expect(response.body == Array("upgrade=other".utf8), "the caller's Upgrade field is sent as it is")
        #expect(pulled.value == 0)
        let again = try await client.execute(
            HTTPClientRequest(
                method: .get, scheme: "http", host: "127.0.0.1", port: port,
                target: "/"))
        #expect(again.status == 426, "the client goes on working")
    }

    @Test func aSilentTunnelTimesOutAfterTheResponseTimeout() async throws {
        let (server, port) = try await startServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        var configuration = HTTPClient.Configuration()
        configuration.responseTimeout = .milliseconds(300)
        let client = HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        let (outbound, send) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        defer { send.finish() }
        let response = try await client.execute(streaming: upgradeRequest(port: port, body: outbound))
        #expect(response.status == 101)
        // Bytes either way keep it open: one way only (the server says nothing back to an empty write) still counts.
        for _ in 0..<4 {
            try await Task.sleep(for: .milliseconds(150))
            send.yield(Array("k".utf8))
            #expect(try await read(1, from: response.body) == Array("K".utf8))
        }
        await #expect(throws: HTTPClientError.responseBodyTimeout) {
            _ = try await response.body.next()
        }
    }

    @Test func a101ToAProtocolThatWasNotAskedForIsMalformed() async throws {
        let (server, port) = try await startServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        defer { client.shutdown() }
        let request = upgradeRequest(port: port, target: "/switch-elsewhere", body: AsyncThrowingStream { $0.finish() })
        await #expect(
            throws: HTTPClientError.malformedResponse(
                reason: "101 Switching Protocols to a protocol the request did not ask for")
        ) {
            _ = try await client.execute(streaming: request)
        }
    }

    @Test func anUpgradeIsRefusedWhereHTTP2MayBeSpoken() async throws {
        let client = HTTPClient()
        defer { client.shutdown() }
        let request = HTTPClientRequest(
            method: .get, scheme: "https", host: "127.0.0.1", port: 9, target: "/",
            headers: ["Connection": "Upgrade", "Upgrade": "websocket"],
            body: .upgrade(AsyncThrowingStream { $0.finish() }))
        await #expect(throws: HTTPClientError.upgradeRequiresHTTP1) {
            _ = try await client.execute(streaming: request)
        }
    }
}
