import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// What the HTTP/2 test routes observed: handlers running now and the most at once; cancel probes by id.
final class H2Observations: Sendable {
    private struct State {
        var running = 0
        var peak = 0
        var probes: [String: String] = [:]
    }

    private let state = Locked(State())

    func begin() {
        state.withLock { state in
            state.running += 1
            state.peak = max(state.peak, state.running)
        }
    }

    func end() { state.withLock { $0.running -= 1 } }
    var peak: Int { state.withLock { $0.peak } }
    func setProbe(_ id: String, _ value: String) { state.withLock { $0.probes[id] = value } }
    func probe(_ id: String) -> String? { state.withLock { $0.probes[id] } }
}

/// Routes for the HTTP/2 client tests: /version (the request's HTTP version), /peer (the client's address, to count
/// connections), /echo (body), /slow?ms=N (counts handlers in flight), /gzip, /cancel-probe?id=X (waits 5 s and
/// records whether it was cancelled).
private struct H2Routes: HTTPServerHandler {
    let observations: H2Observations

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let query = String(request.head.query ?? "")
        switch String(request.head.path) {
        case "/version":
            return HTTPServerResponse(status: 200, body: Array(request.head.version.description.utf8))
        case "/peer":
            return HTTPServerResponse(status: 200, body: Array((request.remoteAddress?.description ?? "?").utf8))
        case "/echo":
            let body = (try? await request.body.collect(upTo: 1 << 24)) ?? []
            return HTTPServerResponse(status: 200, headers: ["X-Version": request.head.version.description], body: body)
        case "/slow":
            observations.begin()
            let ms = Int(query.dropFirst("ms=".count)) ?? 50
            try? await Task.sleep(for: .milliseconds(ms))
            observations.end()
            return HTTPServerResponse(status: 200, body: Array((request.remoteAddress?.description ?? "?").utf8))
        case "/gzip":
            let plain = Array(String(repeating: "hello gzip ", count: 100).utf8)
            let body = (try? Deflater.compress(plain, coding: .gzip)) ?? []
            return HTTPServerResponse(status: 200, headers: ["Content-Encoding": "gzip"], body: body)
        case "/cancel-probe":
            let id = String(query.dropFirst("id=".count))
            observations.setProbe(id, "started")
            do {
                try await Task.sleep(for: .seconds(5))
                observations.setProbe(id, "completed")
            } catch {
                observations.setProbe(id, "cancelled")
            }
            return HTTPServerResponse(status: 200, body: [])
        default:
            return HTTPServerResponse(status: 404, body: [])
        }
    }
}

private struct H2Server {
    let server: HTTPServer
    let port: Int
    let observations: H2Observations

    static func start(
        tls: TLSServerConfiguration? = nil, http2: Bool = true,
        settings: HTTP2Settings = HTTP2Settings()
    ) async throws -> H2Server {
        let observations = H2Observations()
        let group = try EventLoopGroup(threads: 1)
        let loopback = SocketAddress(numericHost: "127.0.0.1", port: 0)!
        let configuration = HTTPServer.Configuration(
            listen: tls == nil ? [loopback] : [], tlsListen: tls == nil ? [] : [loopback], tls: tls, http2: http2,
            http2Settings: settings)
        let server = HTTPServer(
            configuration: configuration, group: group, handler: H2Routes(observations: observations))
        try await server.start()
        let port = (tls == nil ? server.localAddresses : server.tlsLocalAddresses)[0].port
        return H2Server(server: server, port: port, observations: observations)
    }

    func stop() async { await server.shutdown(timeout: .seconds(1)) }
}

/// A server certificate signed by a throwaway CA, and a client configuration that trusts that CA.
private func makeTLS() throws -> (TLSServerConfiguration, HTTPClient.Configuration) {
    let (ca, cert, key) = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory())
    let server = TLSServerConfiguration(
        defaultCertificate: TLSCertificateFiles(certificateChainPath: cert, privateKeyPath: key))
    var client = HTTPClient.Configuration()
    client.tls = TLSClientConfiguration(caFile: ca)
    return (server, client)
}

private func h2cClient(_ configure: (inout HTTPClient.Configuration) -> Void = { _ in }) -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.http2 = .always
    configure(&configuration)
    return HTTPClient(configuration: configuration)
}

private func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

@Suite(.serialized) struct HTTP2ClientTests {
    @Test func tlsNegotiatesH2AndMultiplexesConcurrentRequestsOnOneConnection() async throws {
        let (serverTLS, clientConfiguration) = try makeTLS()
        let server = try await H2Server.start(tls: serverTLS)
        let client = HTTPClient(configuration: clientConfiguration)
        let url = "https://127.0.0.1:\(server.port)/version"
        let responses = try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
            for _ in 0..<50 { group.addTask { try await client.execute(HTTPClientRequest(url: url)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 50)
        #expect(responses.allSatisfy { $0.status == 200 && text($0) == "HTTP/2.0" && $0.head.version == .http2 })
        #expect(responses.filter { $0.timings.connect != nil }.count == 1, "one connection was opened")
        #expect(server.server.openConnections == 1, "the server saw one connection")
        let again = try await client.execute(HTTPClientRequest(url: url))
        #expect(again.timings.connect == nil)
        #expect(server.server.openConnections == 1)
        await server.stop()
    }

    @Test func autoFallsBackToHTTP1WhenTheServerOffersOnlyHTTP1AndAlwaysRefusesIt() async throws {
        let (serverTLS, clientConfiguration) = try makeTLS()
        let server = try await H2Server.start(tls: serverTLS, http2: false)
        let client = HTTPClient(configuration: clientConfiguration)
        let url = "https://127.0.0.1:\(server.port)/version"
        let responses = try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
            for _ in 0..<6 { group.addTask { try await client.execute(HTTPClientRequest(url: url)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.allSatisfy { text($0) == "HTTP/1.1" && $0.head.version == .http1_1 })
        var always = clientConfiguration
        always.http2 = .always
        await #expect(throws: HTTPClientError.self) {
            _ = try await HTTPClient(configuration: always).execute(HTTPClientRequest(url: url))
        }
        var never = clientConfiguration
        never.http2 = .never
        let h2Server = try await H2Server.start(tls: serverTLS)
        let plain = try await HTTPClient(configuration: never)
            .execute(HTTPClientRequest(url: "https://127.0.0.1:\(h2Server.port)/version"))
        #expect(text(plain) == "HTTP/1.1", "never offers only http/1.1")
        let required = try await HTTPClient(configuration: always)
            .execute(HTTPClientRequest(url: "https://127.0.0.1:\(h2Server.port)/version"))
        #expect(text(required) == "HTTP/2.0", "always offers only h2")
        await h2Server.stop()
        await server.stop()
    }

    @Test func h2cPriorKnowledgeCarriesLargeBodiesBothWaysAndDecodesGzip() async throws {
        let server = try await H2Server.start()
        let client = h2cClient { $0.decompression = .init() }
        let base = "http://127.0.0.1:\(server.port)"
        let bodies = (0..<4).map { index in (0..<(1 << 20) + index).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        }
        let echoed = try await withThrowingTaskGroup(of: (Int, HTTPClientResponse).self) { group in
            for (index, body) in bodies.enumerated() {
                group.addTask {
                    (
                        index,
                        try await client.execute(
                            HTTPClientRequest(method: .post, url: "\(base)/echo", body: .bytes(body)))
                    )
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (index, body) in bodies.enumerated() {
            #expect(echoed[index]?.body == body, "1 MiB body \(index) went up and came back over flow control")
            #expect(echoed[index]?.headers.first(name: "x-version") == "HTTP/2.0")
        }
        let decoded = try await client.execute(HTTPClientRequest(url: "\(base)/gzip"))
        #expect(text(decoded) == String(repeating: "hello gzip ", count: 100))
        #expect(!decoded.headers.contains(name: "Content-Encoding"))
        let empty = try await client.execute(HTTPClientRequest(method: .post, url: "\(base)/echo"))
        #expect(empty.status == 200 && empty.body.isEmpty)
        let head = try await client.execute(HTTPClientRequest(method: .head, url: "\(base)/version"))
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(server.server.openConnections == 1)
        await server.stop()
    }

    @Test func respectsTheServersMaxConcurrentStreams() async throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 2
        let server = try await H2Server.start(settings: settings)
        let client = h2cClient()
        let url = "http://127.0.0.1:\(server.port)/slow?ms=30"
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 { group.addTask { try await client.execute(HTTPClientRequest(url: url)).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(server.observations.peak == 2, "never more than 2 in flight at the server (and the limit was reached)")
        #expect(server.server.openConnections == 1)
        await server.stop()
    }

    @Test func goawayDuringLoadRetriesUnprocessedStreamsOnNewConnections() async throws {
        var settings = HTTP2Settings()
        settings.maxRequestsPerConnection = 5
        let server = try await H2Server.start(settings: settings)
        let client = h2cClient()
        let url = "http://127.0.0.1:\(server.port)/slow?ms=20"
        let peers = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    let response = try await client.execute(
                        HTTPClientRequest(method: .post, url: url, body: .bytes([1])))
                    return response.status == 200 ? text(response) : "status \(response.status)"
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(peers.count == 30)
        #expect(!peers.contains { $0.hasPrefix("status") })
        #expect(Set(peers).count >= 6, "at most 5 requests per connection: GOAWAY moved the rest to new connections")
        await server.stop()
    }

    @Test func cancellationResetsOnlyItsStream() async throws {
        let server = try await H2Server.start()
        let client = h2cClient()
        let base = "http://127.0.0.1:\(server.port)"
        _ = try await client.execute(HTTPClientRequest(url: "\(base)/version"))
        let task = Task { try await client.execute(HTTPClientRequest(url: "\(base)/cancel-probe?id=c1")) }
        for _ in 0..<100 where server.observations.probe("c1") == nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.observations.probe("c1") == "started")
        task.cancel()
        await #expect(throws: HTTPClientError.cancelled) { _ = try await task.value }
        for _ in 0..<100 where server.observations.probe("c1") == "started" {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.observations.probe("c1") == "cancelled", "RST_STREAM(CANCEL) cancelled the server's handler")
        let after = try await client.execute(HTTPClientRequest(url: "\(base)/version"))
        #expect(text(after) == "HTTP/2.0")
        #expect(after.timings.connect == nil, "the connection survived the reset")
        #expect(server.server.openConnections == 1)
        await server.stop()
    }

    @Test func responseTimeoutResetsTheStreamAndKeepsTheConnection() async throws {
        let server = try await H2Server.start()
        let client = h2cClient { $0.responseTimeout = .milliseconds(200) }
        let base = "http://127.0.0.1:\(server.port)"
        await #expect(throws: HTTPClientError.responseTimeout) {
            _ = try await client.execute(HTTPClientRequest(url: "\(base)/slow?ms=3000"))
        }
        let after = try await client.execute(HTTPClientRequest(url: "\(base)/version"))
        #expect(text(after) == "HTTP/2.0")
        #expect(server.server.openConnections == 1)
        await server.stop()
    }

    @Test func aConnectionLevelFailureFailsEveryStreamOnIt() async throws {
        let server = try await H2Server.start()
        let client = h2cClient()
        let base = "http://127.0.0.1:\(server.port)"
        let tasks = (0..<8).map { index in
            Task { try await client.execute(HTTPClientRequest(url: "\(base)/cancel-probe?id=k\(index)")) }
        }
        for _ in 0..<200 where (0..<8).contains(where: { server.observations.probe("k\($0)") == nil }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect((0..<8).allSatisfy { server.observations.probe("k\($0)") == "started" })
        // The handlers outlive the drain timeout: the server closes the connection under the streams.
        await server.server.shutdown(timeout: .milliseconds(200))
        for task in tasks {
            await #expect(throws: HTTPClientError.self) { _ = try await task.value }
        }
    }
}
