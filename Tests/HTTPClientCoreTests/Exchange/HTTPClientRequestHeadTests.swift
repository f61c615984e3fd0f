import HTTPWire
import NetCore
import Testing

@testable import HTTPClientCore

/// The HTTP/1.1 head an exchange writes (``HTTPClientExchange/writeHead(into:hostField:)``), without sockets: the
/// origin's `Host` field line that the pool writes once (``HTTPOriginPool/hostField``) gives the same bytes as the
/// field written for each request, and only for a request without its own `Host`.
@Suite struct HTTPClientRequestHeadTests {
    private static func head(
        _ request: HTTPClientRequest, body: [UInt8] = [], loop: EventLoop, hostField: [UInt8]?
    ) throws -> String {
        let exchange = HTTPClientExchange(
            request: request, body: body, streamedBody: nil, progress: HTTPClientProgress(),
            configuration: HTTPClient.Configuration(), loop: loop, startedAt: EventLoop.now(), deadline: nil)
        var bytes: [UInt8] = []
        try exchange.writeHead(into: &bytes, hostField: hostField)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func pool(for request: HTTPClientRequest, loop: EventLoop) -> HTTPOriginPool {
        HTTPOriginPool(origin: request.origin, loop: loop, configuration: HTTPClient.Configuration(), tls: nil)
    }

    @Test(arguments: [
        "http://127.0.0.1:8080/a?b=c", "http://example.com/", "https://example.com:8443/x", "http://[::1]:81/"
    ])
    func thePoolsHostFieldWritesTheSameHead(url: String) throws {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        var headers = HTTPFields()
        headers.add(name: "Accept", value: "*/*")
        let request = try HTTPClientRequest(method: .post, url: url, headers: headers)
        let hostField = try #require(Self.pool(for: request, loop: loop).hostField)
        let cached = try Self.head(request, body: [1, 2], loop: loop, hostField: hostField)
        let written = try Self.head(request, body: [1, 2], loop: loop, hostField: nil)
        #expect(cached == written)
        #expect(cached.contains("\r\nHost: \(request.origin.hostHeader)\r\n"))
        #expect(cached.hasSuffix("Content-Length: 2\r\n\r\n"))
    }

    @Test func aRequestsOwnHostIsKeptAndNotRepeated() throws {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        var headers = HTTPFields()
        headers.add(name: "Host", value: "virtual.example")
        let request = try HTTPClientRequest(url: "http://127.0.0.1:8080/", headers: headers)
        let hostField = try #require(Self.pool(for: request, loop: loop).hostField)
        let head = try Self.head(request, loop: loop, hostField: hostField)
        #expect(head == "GET / HTTP/1.1\r\nHost: virtual.example\r\n\r\n")
    }

    @Test func anOriginHostThatIsNoFieldValueHasNoHostField() throws {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        let request = HTTPClientRequest(scheme: "http", host: "bad\r\nhost", port: 80, target: "/")
        #expect(Self.pool(for: request, loop: group.loops[0]).hostField == nil)
        #expect(throws: HTTP1SerializationError.self) {
            try Self.head(request, loop: group.loops[0], hostField: nil)
        }
    }
}
