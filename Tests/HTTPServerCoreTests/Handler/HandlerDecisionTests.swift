import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// `decide` on the loop, then `handle(_:context:)` in a task with the object `decide` made: over HTTP/1.1 (one request
/// at a time, and pipelined, where a request gets a task of its own) and over HTTP/2.
@Suite(.serialized) struct HandlerDecisionTests {
    /// What `decide` works out: the target, and the thread it was decided on.
    private final class Decided: Sendable {
        let target: String
        let decidedOnLoop: Bool
        init(target: String, decidedOnLoop: Bool) {
            self.target = target
            self.decidedOnLoop = decidedOnLoop
        }
    }

    /// `/now` is answered by `decide`; anything else is handed on with a `Decided`. `handle(_:)` alone (no context)
    /// answers 500, so a context lost on the way shows.
    private final class DecidingHandler: HTTPServerHandler {
        func decide(_ request: HTTPServerRequest) -> HTTPServerDecision {
            if request.head.target == "/now" {
                return .respond(HTTPServerResponse(status: 200, body: Array("now".utf8)))
            }
            return .handle(context: Decided(target: request.head.target, decidedOnLoop: request.loop.inEventLoop))
        }
        func handle(_ request: HTTPServerRequest, context: (any AnyObject & Sendable)?) async -> HTTPServerResponse {
            guard let decided = context as? Decided, decided.target == request.head.target, decided.decidedOnLoop else {
                return HTTPServerResponse(status: 500, body: Array("no decision".utf8))
            }
            if request.head.target.hasPrefix("/slow") { try? await Task.sleep(for: .milliseconds(100)) }
            return HTTPServerResponse(status: 200, body: Array("decided \(decided.target)".utf8))
        }
        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            HTTPServerResponse(status: 500, body: Array("no decision".utf8))
        }
    }

    private static func start() async throws -> (HTTPServer, Int) {
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(
                listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!],
                http2: true),
            group: group, handler: DecidingHandler())
        try await server.start()
        return (server, server.localAddresses[0].port)
    }

    @Test func http1RequestsCarryTheirDecisionIntoTheirTask() async throws {
        let (server, port) = try await Self.start()
        let client = try RawClient(port: port)
        client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: { $0.hasSuffix("decided /a") }).hasPrefix("HTTP/1.1 200 "))
        // Pipelined behind a slow one: the second and third get tasks of their own.
        client.send(
            "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /now HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /c HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.read(until: { $0.hasSuffix("decided /c") })
        let bodies = reply.components(separatedBy: "HTTP/1.1 ").dropFirst()
            .map { $0.components(separatedBy: "\r\n\r\n").last ?? "" }
        #expect(bodies == ["decided /slow", "decided /b", "now", "decided /c"], "\(reply)")
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func http2StreamsCarryTheirDecisionIntoTheirTask() async throws {
        let (server, port) = try await Self.start()
        let urls = ["/a", "/slow", "/now"].map { "http://127.0.0.1:\(port)\($0)" }
        // nghttp: the three on one connection at once (bodies printed as they end).
        let run = try ProcessRunner.run("nghttp", urls)
        #expect(run.status == 0)
        for body in ["decided /a", "decided /slow", "now"] { #expect(run.stdout.contains(body), "\(run.stdout)") }
        #expect(run.stdout.utf8.count == "decided /adecided /slownow".utf8.count, "\(run.stdout)")
        await server.shutdown(timeout: .seconds(1))
    }
}
