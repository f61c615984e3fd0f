import HTTPServer
import HTTPWire
import NetCore

/// Routes used by the server tests: /hello, /echo (body), /target (echoes the request target), /slow?ms=N, /stream.
struct TestRoutes: HTTPServerHandler {
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let path = String(request.head.path)
        switch path {
        case "/hello":
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("hello".utf8))
        case "/echo":
            do {
                let body = try await request.body.collect(upTo: 1 << 20)
                return HTTPServerResponse(status: 200, body: body)
            } catch {
                return HTTPServerResponse(status: 400, body: [])
            }
        case "/target":
            return HTTPServerResponse(status: 200, body: Array(request.head.target.utf8))
        case "/slow":
            let ms = Int(request.head.query?.split(separator: "=").last ?? "100") ?? 100
            try? await Task.sleep(for: .milliseconds(ms))
            return HTTPServerResponse(status: 200, body: Array("slow \(ms)".utf8))
        case "/stream":
            let stream = ByteStream()
            Task {
                for part in ["one,", "two,", "three"] {
                    stream.yield(Array(part.utf8))
                    try? await Task.sleep(for: .milliseconds(5))
                }
                stream.finish()
            }
            return HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(stream))
        default:
            return HTTPServerResponse(status: 404, body: Array("nope".utf8))
        }
    }
}

/// Starts an ``HTTPServer`` on a free loopback port with the test routes.
func startTestServer(limits: HTTPServerLimits = HTTPServerLimits(), tls: TLSServerConfiguration? = nil,
                     threads: Int = 1) async throws -> (HTTPServer, Int) {
    let group = try EventLoopGroup(threads: threads)
    let loopback = SocketAddress(numericHost: "127.0.0.1", port: 0)!
    let configuration = HTTPServer.Configuration(
        listen: tls == nil ? [loopback] : [], tlsListen: tls == nil ? [] : [loopback], tls: tls, limits: limits)
    let server = HTTPServer(configuration: configuration, group: group, handler: TestRoutes())
    try await server.start()
    let port = (tls == nil ? server.localAddresses : server.tlsLocalAddresses)[0].port
    return (server, port)
}
