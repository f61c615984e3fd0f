import Foundation
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `decide` answering `.answerLater`: `start` runs on the loop with no task, and its responder's answer takes the
/// request's place in the response order (HTTP/1.1, pipelined with immediate and later answers, one given inside
/// `start`), over HTTP/2, compressed as the server compresses; a client that goes away cancels the work.
@Suite(.serialized) struct AnswerLaterTests {
    /// What `cancel()` calls recorded, by probe id.
    private static let cancelled = Locked<Set<String>>([])

    /// Stands for work under way: its cancellation is recorded and answered.
    private final class Probe: HTTPServerCancellation {
        let id: String
        let responder: any HTTPServerResponder
        init(id: String, responder: any HTTPServerResponder) {
            self.id = id
            self.responder = responder
        }
        func cancel() {
            AnswerLaterTests.cancelled.withLock { _ = $0.insert(id) }
            responder.respond(HTTPServerResponse(status: 499, body: []))
        }
    }

    /// `/now` is answered by `decide`; `/later?ms=N` after N ms by a loop timer; `/inside` inside `start`;
    /// `/probe?id=X` only when cancelled; `/big` after a timer with 4 KiB of JSON (compressible); `/stream` after a
    /// timer with a streamed body. Each body says
    /// whether `start` ran on the loop, and whether in a task.
    private struct LaterHandler: HTTPServerHandler {
        func decide(_ request: HTTPServerRequest) -> HTTPServerDecision {
            if request.head.target == "/now" {
                return .respond(HTTPServerResponse(status: 200, body: Array("now".utf8)))
            }
            return .answerLater(context: nil)
        }

        func start(
            _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder
        ) {
            let target = request.head.target
            let inTask = withUnsafeCurrentTask { $0 != nil }
            let body = Array(
                "\(target) \(request.loop.inEventLoop ? "loop" : "elsewhere")\(inTask ? " in a task" : "")".utf8)
            if target == "/inside" { return responder.respond(HTTPServerResponse(status: 200, body: body)) }
            if target == "/stream" {
                let stream = ByteStream.complete(Array("streamed ".utf8) + body)
                _ = request.loop.schedule(after: .milliseconds(10)) {
                    responder.respond(HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(stream)))
                }
                return
            }
            if target.hasPrefix("/probe?id=") {
                responder.cancellation = Probe(id: String(target.dropFirst("/probe?id=".count)), responder: responder)
                return
            }
            var response = HTTPServerResponse(status: 200, body: body)
            var delay = Duration.milliseconds(Int(target.split(separator: "=").last ?? "") ?? 0)
            if target == "/big" {
                response = HTTPServerResponse(
                    status: 200, headers: ["Content-Type": "application/json"],
                    body: Array(String(repeating: "{\"a\":1}", count: 600).utf8))
                delay = .milliseconds(10)
            }
            _ = request.loop.schedule(after: delay) { responder.respond(response) }
        }

        func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
            HTTPServerResponse(status: 500, body: Array("handled in a task".utf8))
        }
    }

    private static func start(compression: CompressionPolicy? = nil) async throws -> (HTTPServer, Int) {
        let group = try EventLoopGroup(threads: 1)
        let server = HTTPServer(
            configuration: .init(
                listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!], http2: true,
                compression: compression),
            group: group, handler: LaterHandler())
        try await server.start()
        return (server, server.localAddresses[0].port)
    }

    private static func bodies(_ reply: String) -> [String] {
        reply.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.components(separatedBy: "\r\n\r\n").last ?? "" }
    }

    @Test func http1AnswersKeepTheirPlaceWhateverOrderTheyComeIn() async throws {
        let (server, port) = try await Self.start()
        let client = try RawClient(port: port)
        client.send("GET /later?ms=0 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: { $0.hasSuffix("/later?ms=0 loop") }).hasPrefix("HTTP/1.1 200 "))
        // The first answer comes last; one is given inside `start`, one by `decide`.
        client.send(
            "GET /later?ms=150 HTTP/1.1\r\nHost: x\r\n\r\nGET /inside HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /now HTTP/1.1\r\nHost: x\r\n\r\nGET /later?ms=20 HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.read(until: { $0.hasSuffix("/later?ms=20 loop") })
        #expect(Self.bodies(reply) == ["/later?ms=150 loop", "/inside loop", "now", "/later?ms=20 loop"], "\(reply)")
        // A streamed body given later goes out chunked.
        client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: { $0.hasSuffix("0\r\n\r\n") }).contains("streamed /stream loop"))
        // An answer given inside `start` alone on the connection goes out at once too.
        client.send("GET /inside HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: { $0.hasSuffix("/inside loop") }).hasPrefix("HTTP/1.1 200 "))
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func aClientThatGoesAwayCancelsTheWork() async throws {
        let (server, port) = try await Self.start()
        let id = UUID().uuidString
        var client: RawClient? = try RawClient(port: port)
        client?.send("GET /probe?id=\(id) HTTP/1.1\r\nHost: x\r\n\r\n")
        try await Task.sleep(for: .milliseconds(100))
        #expect(!Self.cancelled.withLock { $0.contains(id) })
        if let fd = client?.fd {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        client = nil  // closed with a reset
        var seen = false
        for _ in 0..<40 where !seen {
            try await Task.sleep(for: .milliseconds(50))
            seen = Self.cancelled.withLock { $0.contains(id) }
        }
        #expect(seen)
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func http2StreamsAreAnsweredByTheirRespondersWithoutATask() async throws {
        let (server, port) = try await Self.start()
        let urls = ["/later?ms=100", "/inside", "/now", "/stream"].map { "http://127.0.0.1:\(port)\($0)" }
        let run = try ProcessRunner.run("nghttp", urls)
        #expect(run.status == 0)
        #expect(!run.stdout.contains("in a task"), "\(run.stdout)")
        for body in ["/later?ms=100 loop", "/inside loop", "now", "streamed /stream loop"] {
            #expect(run.stdout.contains(body), "\(run.stdout)")
        }
        await server.shutdown(timeout: .seconds(1))
    }

    /// `answer(later:context:)`, for a caller that drives a handler from a task (GatewayBench): the responder resumes
    /// the task, and cancelling the task cancels the work.
    @Test func aTaskAwaitsALaterAnswerAndItsCancellationReachesTheWork() async throws {
        let group = try EventLoopGroup(threads: 1)
        let loop = group.loops[0]
        func request(_ target: String) -> HTTPServerRequest {
            HTTPServerRequest(
                head: HTTPRequestHead(method: .get, target: target, version: .http1_1, headers: ["Host": "x"]),
                body: .complete([]), declaredBodyLength: nil, remoteAddress: nil, isTLS: false, loop: loop)
        }
        let later = await Task(executorPreference: loop) {
            await LaterHandler().answer(later: request("/later?ms=20"), context: nil)
        }.value
        #expect(later.head.status == 200)
        guard case .bytes(let body) = later.body else {
            Issue.record("\(later.body)")
            return
        }
        #expect(String(decoding: body, as: UTF8.self).hasPrefix("/later?ms=20 loop"))
        let id = UUID().uuidString
        let probe = Task(executorPreference: loop) {
            await LaterHandler().answer(later: request("/probe?id=\(id)"), context: nil)
        }
        try await Task.sleep(for: .milliseconds(50))
        probe.cancel()
        #expect(await probe.value.head.status == 499)
        #expect(Self.cancelled.withLock { $0.contains(id) })
        group.shutdown()
    }

    @Test func aLaterAnswerIsCompressedAsTheServerCompresses() async throws {
        let (server, port) = try await Self.start(compression: CompressionPolicy())
        let client = try RawClient(port: port)
        client.send("GET /big HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
        let reply = client.read(until: { $0.contains("\r\n\r\n") })
        #expect(reply.lowercased().contains("content-encoding: gzip"), "\(reply)")
        let h2 = try ProcessRunner.run("nghttp", ["-v", "-H", "accept-encoding: gzip", "http://127.0.0.1:\(port)/big"])
        #expect(h2.stdout.contains("content-encoding: gzip"), "\(h2.stdout.suffix(2000))")
        await server.shutdown(timeout: .seconds(1))
    }
}
