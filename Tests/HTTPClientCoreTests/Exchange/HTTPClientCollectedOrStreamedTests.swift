import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import Testing

/// `/bytes/N`: N bytes (`i % 251`) with `Content-Length`; `/chunked/N`: the same without a length (chunked over
/// HTTP/1.1); `/nothing`: 204.
private struct SizedBodies: HTTPServerHandler {
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let parts = request.head.target.split(separator: "/")
        let count = parts.count == 2 ? Int(parts[1]) ?? 0 : 0
        let bytes = (0..<count).map { UInt8($0 % 251) }
        switch parts.first {
        case "bytes":
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: bytes)
        case "chunked":
            return HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(.complete(bytes)))
        default:
            return HTTPServerResponse(status: 204, body: [])
        }
    }
}

/// `execute(_:streamingBodiesLongerThan:)`: one exchange that collects short bodies and streams the others.
@Suite(.serialized) struct HTTPClientCollectedOrStreamedTests {
    static let threshold = 4096

    @Test(arguments: [HTTPClient.Configuration.HTTP2Mode.never, .always])
    func shortBodiesAreCollectedLongOnesStreamed(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: SizedBodies())
        try await server.start()
        var configuration = HTTPClient.Configuration()
        configuration.http2 = mode
        // Smaller than the collected bodies below: the limit is for `execute`, not for this mode.
        configuration.maxResponseBodyBytes = 1000
        let client = HTTPClient(configuration: configuration)
        let base = "http://127.0.0.1:\(server.localAddresses[0].port)"
        func send(_ target: String, method: HTTPMethod = .get) async throws -> HTTPClientResponseOrStream {
            try await client.execute(
                HTTPClientRequest(method: method, url: base + target),
                streamingBodiesLongerThan: Self.threshold)
        }
        let expected = { (count: Int) in (0..<count).map { UInt8($0 % 251) } }

        for count in [0, 300, 2000, Self.threshold] {
            guard case .collected(let response) = try await send("/bytes/\(count)") else {
                Issue.record("a \(count)-byte body within the threshold is collected")
                continue
            }
            #expect(response.status == 200 && response.body == expected(count))
        }
        for target in ["/bytes/\(Self.threshold + 1)", "/chunked/3000", "/bytes/100000"] {
            guard case .streamed(let response) = try await send(target) else {
                Issue.record("\(target) is streamed")
                continue
            }
            let count = Int(target.split(separator: "/")[1])!
            #expect(try await response.body.collect(upTo: 1 << 20) == expected(count))
        }
        guard case .collected(let head) = try await send("/bytes/100000", method: .head) else {
            Issue.record("a HEAD response has no body to stream")
            return
        }
        #expect(head.status == 200 && head.body.isEmpty)
        guard case .collected(let nothing) = try await send("/nothing") else {
            Issue.record("a 204 has no body to stream")
            return
        }
        #expect(nothing.status == 204)
        let again = try await client.execute(HTTPClientRequest(url: base + "/bytes/10"))
        #expect(again.timings.connect == nil, "the connection is reused after both kinds")
        await server.shutdown(timeout: .seconds(1))
    }
}
