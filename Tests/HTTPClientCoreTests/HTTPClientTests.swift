import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// Echo routes for client tests: /hello, /echo, /slow?ms=N, /headers (echoes request headers).
private struct EchoRoutes: HTTPServerHandler {
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        switch String(request.head.path) {
        case "/hello":
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("hello".utf8))
        case "/echo":
            let body = (try? await request.body.collect(upTo: 1 << 24)) ?? []
            return HTTPServerResponse(status: 200, body: body)
        case "/slow":
            let ms = Int(request.head.query?.split(separator: "=").last ?? "100") ?? 100
            try? await Task.sleep(for: .milliseconds(ms))
            return HTTPServerResponse(status: 200, body: Array("slow".utf8))
        case "/gzip":
            let plain = Array(String(repeating: "hello gzip ", count: 100).utf8)
            let body = (try? Deflater.compress(plain, coding: .gzip)) ?? []
            return HTTPServerResponse(status: 200, headers: ["Content-Encoding": "gzip"], body: body)
        case "/bomb":
            let body = (try? Deflater.compress([UInt8](repeating: 0, count: 16 << 20), coding: .gzip)) ?? []
            return HTTPServerResponse(status: 200, headers: ["Content-Encoding": "gzip"], body: body)
        case "/headers":
            return HTTPServerResponse(status: 200, body: Array(request.head.headers.description.utf8))
        default:
            return HTTPServerResponse(status: 404, body: [])
        }
    }
}

private func startEchoServer(tls: TLSServerConfiguration? = nil) async throws -> (HTTPServer, Int) {
    let group = try EventLoopGroup(threads: 1)
    let loopback = SocketAddress(numericHost: "127.0.0.1", port: 0)!
    let server = HTTPServer(
        configuration: .init(listen: tls == nil ? [loopback] : [], tlsListen: tls == nil ? [] : [loopback], tls: tls),
        group: group, handler: EchoRoutes())
    try await server.start()
    return (server, (tls == nil ? server.localAddresses : server.tlsLocalAddresses)[0].port)
}

@Suite(.serialized) struct HTTPClientTests {
    @Test func getPostAndKeepAliveReuse() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        let hello = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello"))
        #expect(hello.status == 200)
        #expect(hello.body == Array("hello".utf8))
        #expect(hello.timings.connect != nil)
        let echo = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "http://127.0.0.1:\(port)/echo",
                body: .bytes(Array("ping".utf8))))
        #expect(echo.body == Array("ping".utf8))
        #expect(echo.timings.connect == nil, "the second request reuses the pooled connection")
        #expect(server.openConnections == 1)
        let headers = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/headers"))
        #expect(String(decoding: headers.body, as: UTF8.self).contains("Host: 127.0.0.1:\(port)"))
    }

    @Test func concurrentRequestsRespectThePoolLimit() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerOrigin = 4
        let client = HTTPClient(configuration: configuration)
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    (try? await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow?ms=20")))?.status
                        ?? -1
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(server.openConnections <= 4)
    }

    @Test func responseTimeoutAndRefusedConnectionAreErrors() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        var configuration = HTTPClient.Configuration()
        configuration.responseTimeout = .milliseconds(100)
        let client = HTTPClient(configuration: configuration)
        await #expect(throws: HTTPClientError.responseTimeout) {
            _ = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow?ms=1000"))
        }
        await #expect(throws: HTTPClientError.self) {
            _ = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:1/"))
        }
        await #expect(throws: HTTPClientError.invalidURL("ftp://x/")) {
            _ = try await client.execute(HTTPClientRequest(url: "ftp://x/"))
        }
    }

    /// The response timer is armed once per connection and re-armed when it fires: a request sent on a reused
    /// connection must still time out on its own due time, later or earlier than the timer at hand.
    @Test func timeoutsHoldForEveryRequestOnAReusedConnection() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerOrigin = 1
        configuration.responseTimeout = .milliseconds(300)
        let client = HTTPClient(configuration: configuration)
        let url = "http://127.0.0.1:\(port)"
        for _ in 0..<3 {
            // Quick answers on one connection leave the timer armed for the first request's due time.
            #expect(try await client.execute(HTTPClientRequest(url: "\(url)/hello")).status == 200)
        }
        try await Task.sleep(for: .milliseconds(150))
        let started = ContinuousClock.now
        await #expect(throws: HTTPClientError.responseTimeout) {
            _ = try await client.execute(HTTPClientRequest(url: "\(url)/slow?ms=2000"))
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(280), "the request got its own 300 ms, not what was left of an earlier one's")
        #expect(waited < .milliseconds(1500))

        // A deadline earlier than the armed timer: the timer is brought forward.
        #expect(try await client.execute(HTTPClientRequest(url: "\(url)/hello")).status == 200)
        let shortStart = ContinuousClock.now
        await #expect(throws: HTTPClientError.responseTimeout) {
            _ = try await client.execute(
                HTTPClientRequest(url: "\(url)/slow?ms=2000"),
                deadline: .now + .milliseconds(60))
        }
        #expect(ContinuousClock.now - shortStart < .milliseconds(250))

        // A timeout bounds the exchange as a deadline that far ahead would; with both, the earlier applies.
        let bounds: [(deadlineIn: Duration?, timeout: Duration)] = [
            (nil, .milliseconds(60)), (.seconds(30), .milliseconds(60)), (.milliseconds(60), .seconds(30))
        ]
        for bound in bounds {
            let started = ContinuousClock.now
            await #expect(throws: HTTPClientError.responseTimeout) {
                _ = try await client.execute(
                    HTTPClientRequest(url: "\(url)/slow?ms=2000"),
                    deadline: bound.deadlineIn.map { started + $0 }, timeout: bound.timeout)
            }
            #expect(ContinuousClock.now - started < .milliseconds(250))
        }
        #expect(try await client.execute(HTTPClientRequest(url: "\(url)/hello"), timeout: .seconds(5)).status == 200)
    }

    /// A deadline that passed before the request was prepared (a retry that starts late, a busy loop) times the request
    /// out; it must never trap, whatever the fraction of a second it is late by.
    @Test func aDeadlineAlreadyPastTimesOutWithoutTrapping() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        for late in [Duration.milliseconds(1), .milliseconds(300), .milliseconds(999), .seconds(2)] {
            let started = ContinuousClock.now
            await #expect(throws: HTTPClientError.responseTimeout, "late by \(late)") {
                _ = try await client.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow?ms=2000"),
                    deadline: .now - late)
            }
            #expect(ContinuousClock.now - started < .milliseconds(1500))
        }
        #expect(try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello")).status == 200)
    }

    @Test func cancellingTheTaskCancelsTheRequest() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        let task = Task { try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow?ms=2000")) }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        task.cancel()
        await #expect(throws: HTTPClientError.cancelled) { _ = try await task.value }
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellationAtAnyMomentEndsTheRequestAndLeavesTheClientUsable() async throws {
        let (server, port) = try await startEchoServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = HTTPClient()
        let loop = client.group.loops[0]
        var cancelledInFlight = 0
        for round in 0..<100 {
            // Off the loop and on it; cancelled before the exchange begins, as it begins, and while it runs.
            let request = try HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow?ms=20")
            let task =
                round % 2 == 0
                ? Task { try await client.execute(request) }
                : Task(executorPreference: loop) { try await client.execute(request) }
            if round % 4 == 0 { await Task.yield() } else { try await Task.sleep(for: .microseconds(round * 20)) }
            task.cancel()
            do {
                let response = try await task.value
                #expect(response.head.status == 200)
            } catch {
                // Cancelled before the call: `CancellationError`; after it began: the client's own error.
                #expect(error is CancellationError || error as? HTTPClientError == .cancelled)
                if error as? HTTPClientError == .cancelled { cancelledInFlight += 1 }
            }
        }
        #expect(cancelledInFlight > 0)
        let after = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello"))
        #expect(after.head.status == 200)
    }

    @Test func tlsVerifiesAgainstConfiguredCAAndRejectsUnknownOnes() async throws {
        let directory = ProcessRunner.temporaryDirectory()
        let (ca, cert, key) = try ProcessRunner.makeCertificates(in: directory)
        let tls = TLSServerConfiguration(
            defaultCertificate: TLSCertificateFiles(certificateChainPath: cert, privateKeyPath: key))
        let (server, port) = try await startEchoServer(tls: tls)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let untrusting = HTTPClient()
        await #expect(throws: HTTPClientError.self) {
            _ = try await untrusting.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/hello"))
        }
        var configuration = HTTPClient.Configuration()
        configuration.tls = TLSClientConfiguration(caFile: ca)
        let trusting = HTTPClient(configuration: configuration)
        let response = try await trusting.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/hello"))
        #expect(response.body == Array("hello".utf8))
    }

    @Test func staleKeepAliveConnectionIsRetriedForIdempotentRequests() async throws {
        var limits = HTTPServerLimits()
        limits.idleTimeout = .milliseconds(300)
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!], limits: limits),
            group: group, handler: EchoRoutes())
        try await server.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let port = server.localAddresses[0].port
        let client = HTTPClient()
        _ = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello"))
        try await Task.sleep(for: .milliseconds(900))
        let again = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/hello"))
        #expect(again.status == 200)
    }
}

@Suite(.serialized) struct HTTPClientDecompressionTests {
    @Test func gzipIsDecodedOnlyWhenAskedAndBombsAreCapped() async throws {
        let (server, port) = try await startEchoServer()
        let raw = try await HTTPClient().execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/gzip"))
        #expect(raw.headers.first(name: "Content-Encoding") == "gzip", "pass-through by default")
        #expect(raw.body.starts(with: [0x1f, 0x8b]))
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .init(maxBytes: 1 << 20, maxRatio: 1000)
        let decoding = HTTPClient(configuration: configuration)
        let decoded = try await decoding.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/gzip"))
        #expect(String(decoding: decoded.body, as: UTF8.self) == String(repeating: "hello gzip ", count: 100))
        #expect(!decoded.headers.contains(name: "Content-Encoding"))
        #expect(decoded.headers.first(name: "Content-Length") == "1100")
        await #expect(throws: HTTPClientError.decompressionLimitExceeded) {
            _ = try await decoding.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/bomb"))
        }
        await server.shutdown(timeout: .seconds(1))
    }
}
