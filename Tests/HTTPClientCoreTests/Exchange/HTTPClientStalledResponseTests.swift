import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// Responses that start and then stop or crawl:
/// - `/stall`: the head and 10 bytes, then nothing (the body never ends);
/// - `/trickle?ms=N&n=K`: one byte every N ms, K times, then the end;
/// - `/big`: 4 MiB, as fast as the connection takes it;
/// - `/big-then-stall`: the same 4 MiB, then nothing (the body never ends).
private struct SlowBodies: HTTPServerHandler {
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let stream = ByteStream()
        let parameters = Dictionary(
            uniqueKeysWithValues: (request.head.query ?? "").split(separator: "&").compactMap { pair in
                let parts = pair.split(separator: "=")
                return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? 0) : nil
            })
        switch String(request.head.path) {
        case "/stall":
            _ = stream.yield(Array("0123456789".utf8))
        case "/trickle":
            let interval = parameters["ms"] ?? 100
            let count = parameters["n"] ?? 5
            Task {
                for _ in 0..<count {
                    try? await Task.sleep(for: .milliseconds(interval))
                    _ = stream.yield([UInt8(ascii: "x")])
                }
                stream.finish()
            }
        case "/big", "/big-then-stall":
            let ends = request.head.path == "/big"
            Task {
                for _ in 0..<64 { _ = stream.yield([UInt8](repeating: 7, count: 64 * 1024)) }
                if ends { stream.finish() }
            }
        default:
            return HTTPServerResponse(status: 404, body: [])
        }
        return HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(stream))
    }
}

/// A client speaking HTTP/1.1, or HTTP/2 with prior knowledge (the server takes both on one cleartext port).
private func client(http2: Bool, _ configure: (inout HTTPClient.Configuration) -> Void) -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.http2 = http2 ? .always : .never
    configure(&configuration)
    return HTTPClient(configuration: configuration)
}

@Suite(.serialized) struct HTTPClientStalledResponseTests {
    private func startServer() async throws -> (HTTPServer, String) {
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: group, handler: SlowBodies())
        try await server.start()
        return (server, "http://127.0.0.1:\(server.localAddresses[0].port)")
    }

    @Test(arguments: [false, true])
    func aResponseThatStallsMidBodyTimesOut(http2: Bool) async throws {
        let (server, base) = try await startServer()
        defer { Task { await server.shutdown(timeout: .milliseconds(100)) } }
        let client = client(http2: http2) { $0.responseTimeout = .milliseconds(300) }
        let started = ContinuousClock.now
        await #expect(throws: HTTPClientError.responseBodyTimeout) {
            _ = try await client.execute(HTTPClientRequest(url: "\(base)/stall"))
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(280), "the response timeout counts from the last bytes")
        #expect(waited < .seconds(3), "a body that stops is not waited for forever")
    }

    @Test(arguments: [false, true])
    func aBodyThatKeepsMovingOutlivesTheResponseTimeout(http2: Bool) async throws {
        let (server, base) = try await startServer()
        defer { Task { await server.shutdown(timeout: .milliseconds(100)) } }
        let client = client(http2: http2) { $0.responseTimeout = .milliseconds(300) }
        let response = try await client.execute(HTTPClientRequest(url: "\(base)/trickle?ms=100&n=8"))
        #expect(
            response.body == Array(repeating: UInt8(ascii: "x"), count: 8), "800 ms of body, never 300 ms without bytes"
        )
    }

    @Test(arguments: [false, true])
    func theDeadlineCoversTheWholeBody(http2: Bool) async throws {
        let (server, base) = try await startServer()
        defer { Task { await server.shutdown(timeout: .milliseconds(100)) } }
        let client = client(http2: http2) { $0.responseTimeout = nil }
        let started = ContinuousClock.now
        await #expect(throws: HTTPClientError.responseBodyTimeout) {
            _ = try await client.execute(
                HTTPClientRequest(url: "\(base)/trickle?ms=100&n=30"),
                deadline: .now + .milliseconds(400))
        }
        #expect(ContinuousClock.now - started < .milliseconds(1500), "cut at the deadline, not at the body's end (3 s)")
    }

    @Test(arguments: [false, true])
    func aStreamedBodyThatStallsFailsItsStream(http2: Bool) async throws {
        let (server, base) = try await startServer()
        defer { Task { await server.shutdown(timeout: .milliseconds(100)) } }
        let client = client(http2: http2) { $0.responseTimeout = .milliseconds(300) }
        let response = try await client.execute(streaming: HTTPClientRequest(url: "\(base)/stall"))
        #expect(response.head.status == 200)
        var received: [UInt8] = []
        await #expect(throws: HTTPClientError.responseBodyTimeout) {
            for try await chunk in response.body { received += chunk }
        }
        #expect(received == Array("0123456789".utf8))
    }

    @Test(arguments: [false, true])
    func aStreamedBodysSlowReaderIsNotTakenForAStall(http2: Bool) async throws {
        let (server, base) = try await startServer()
        defer { Task { await server.shutdown(timeout: .milliseconds(100)) } }
        let client = client(http2: http2) { $0.responseTimeout = .milliseconds(200) }
        let response = try await client.execute(streaming: HTTPClientRequest(url: "\(base)/big"))
        // The reader lets the body back up (reading pauses) for longer than the response timeout.
        try await Task.sleep(for: .milliseconds(600))
        var count = 0
        for try await chunk in response.body { count += chunk.count }
        #expect(count == 64 * 64 * 1024)
    }

    @Test(arguments: [false, true])
    func aStallAfterASlowReaderCaughtUpStillTimesOut(http2: Bool) async throws {
        let (server, base) = try await startServer()
        defer { Task { await server.shutdown(timeout: .milliseconds(100)) } }
        let client = client(http2: http2) { $0.responseTimeout = .milliseconds(200) }
        let response = try await client.execute(streaming: HTTPClientRequest(url: "\(base)/big-then-stall"))
        try await Task.sleep(for: .milliseconds(600))
        let reader = Task {
            var count = 0
            do {
                for try await chunk in response.body { count += chunk.count }
                return (count, nil as HTTPClientError?)
            } catch {
                return (count, error as? HTTPClientError)
            }
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(5))
            reader.cancel()
            response.cancel()
        }
        let (count, error) = await reader.value
        watchdog.cancel()
        #expect(count == 64 * 64 * 1024)
        #expect(error == .responseBodyTimeout, "the response timeout holds again once the reader has caught up")
    }
}
