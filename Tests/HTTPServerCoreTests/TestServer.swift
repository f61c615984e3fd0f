import Dispatch
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport

/// What /cancel-probe and /stubborn handlers observed, by probe id: the last state ("started", then "cancelled" or
/// "completed"), how many started, how many are running and the most that ran at once.
actor CancelProbe {
    static let shared = CancelProbe()
    private var states: [String: String] = [:]
    private var startedCount: [String: Int] = [:]
    private var runningCount: [String: Int] = [:]
    private var peakCount: [String: Int] = [:]

    func begin(_ id: String) {
        states[id] = "started"
        startedCount[id, default: 0] += 1
        runningCount[id, default: 0] += 1
        peakCount[id] = max(peakCount[id] ?? 0, runningCount[id] ?? 0)
    }

    func end(_ id: String, _ state: String) {
        states[id] = state
        runningCount[id, default: 0] -= 1
    }

    func state(_ id: String) -> String { states[id] ?? "unknown" }
    func started(_ id: String) -> Int { startedCount[id] ?? 0 }
    func running(_ id: String) -> Int { runningCount[id] ?? 0 }
    func peak(_ id: String) -> Int { peakCount[id] ?? 0 }
}

/// Routes used by the server tests: /hello, /echo (body), /target (echoes the request target), /slow?ms=N, /stream,
/// /version (the request's HTTP version), /body-state (whether the request has a body, whether it had all arrived
/// and its length), /task-id?ms=N (which task ran the handler, after N ms), /cancel-probe?id=X (waits 5 s, recording whether it saw cancellation),
/// /cancel-probe-result?id=X and /stubborn?id=X (waits 1 s ignoring cancellation, like work that cannot be
/// interrupted), /now (the request target, answered by `respondImmediately`, without a task), /upgrade-echo
/// (switches to `echo-test` and echoes), /upgrade-refuse (426 to an upgrade) and /bad-101 (a 101 to anything).
struct TestRoutes: HTTPServerHandler {
    func respondImmediately(to request: HTTPServerRequest) -> HTTPServerResponse? {
        guard request.head.path == "/now" else { return nil }
        return HTTPServerResponse(status: 200, headers: ["X-Answered": "now"], body: Array(request.head.target.utf8))
    }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let path = String(request.head.path)
        switch path {
        case "/hello":
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("hello".utf8))
        case "/per-message-fields", "/per-message-fields?again":
            // Fields whose values are new in every response (HTTP/2 sends them never indexed), beside ordinary ones.
            return HTTPServerResponse(
                status: 200,
                headers: [
                    "Content-Type": "text/plain", "X-Request-Id": "req-\(UInt64.random(in: 0...UInt64.max))",
                    "Traceparent": "00-\(String(repeating: "a", count: 32))-\(String(repeating: "b", count: 16))-01",
                    "X-Plain": "same"
                ], body: Array("hello".utf8))
        case "/echo":
            do {
                let body = try await request.body.collect(upTo: 1 << 20)
                return HTTPServerResponse(status: 200, body: body)
            } catch {
                // Sent with the server's status when the server gave up on the body.
                return HTTPServerResponse(
                    status: 400, body: Array("echo failed \(request.bodyRejectionStatus ?? 0)".utf8))
            }
        case "/deaf":
            // Ignores its body and its cancellation for 3 s.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + 3) { done.resume() }
            }
            return HTTPServerResponse(status: 200, body: Array("deaf".utf8))
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
        case "/version":
            return HTTPServerResponse(status: 200, body: Array(request.head.version.description.utf8))
        case "/task-id":
            // Which task runs the handler (the connection's worker, or a task of its own), after an optional wait.
            let ms = Int(request.head.query?.split(separator: "=").last ?? "0") ?? 0
            if ms > 0 { try? await Task.sleep(for: .milliseconds(ms)) }
            let id = withUnsafeCurrentTask { $0.map { String($0.hashValue) } } ?? "none"
            return HTTPServerResponse(status: 200, body: Array("task \(id)".utf8))
        case "/body-state":
            let state = "hasBody=\(request.hasBody) finished=\(request.bodyIsFinished)"
            let body = (try? await request.body.collect(upTo: 1 << 20)) ?? []
            return HTTPServerResponse(status: 200, body: Array("\(state) bytes=\(body.count)".utf8))
        case "/cancel-probe":
            let id = String(request.head.query?.dropFirst("id=".count) ?? "")
            await CancelProbe.shared.begin(id)
            do {
                try await Task.sleep(for: .seconds(5))
                await CancelProbe.shared.end(id, "completed")
            } catch {
                await CancelProbe.shared.end(id, Task.isCancelled ? "cancelled" : "error")
            }
            return HTTPServerResponse(status: 200, body: [])
        case "/stubborn":
            let id = String(request.head.query?.dropFirst("id=".count) ?? "")
            await CancelProbe.shared.begin(id)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { done.resume() }
            }
            await CancelProbe.shared.end(id, Task.isCancelled ? "cancelled" : "completed")
            return HTTPServerResponse(status: 200, body: Array("stubborn".utf8))
        case "/upgrade-echo":
            // Switches to `echo-test` and sends back every byte the client sends after the 101, until it closes.
            guard let input = request.upgradeInput, request.head.requestsUpgrade(to: "echo-test") else {
                return HTTPServerResponse(status: 400, body: Array("no upgrade".utf8))
            }
            let (demand, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let output = ByteStream(onDemand: { signal.yield() })
            Task {
                var demandSignals = demand.makeAsyncIterator()
                do {
                    while let chunk = try await input.next() {
                        if !output.yield(chunk) { _ = await demandSignals.next() }
                    }
                    output.finish()
                } catch {
                    output.fail(error)
                }
            }
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 101, headers: ["Upgrade": "echo-test"]),
                body: .stream(output))
        case "/upgrade-refuse":
            return HTTPServerResponse(
                status: 426, headers: ["Upgrade": "something-else"],
                body: Array("upgrade refused, input=\(request.upgradeInput != nil)".utf8))
        case "/bad-101":
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 101, headers: ["Upgrade": "echo-test"]),
                body: .stream(ByteStream.complete([])))
        case "/cancel-probe-result":
            let id = String(request.head.query?.dropFirst("id=".count) ?? "")
            return HTTPServerResponse(status: 200, body: Array(await CancelProbe.shared.state(id).utf8))
        default:
            return HTTPServerResponse(status: 404, body: Array("nope".utf8))
        }
    }
}

/// Starts an ``HTTPServer`` on a free loopback port with the test routes.
func startTestServer(
    limits: HTTPServerLimits = HTTPServerLimits(), tls: TLSServerConfiguration? = nil,
    threads: Int = 1, http2: Bool = true,
    http2Settings: HTTP2Settings = HTTP2Settings()
) async throws -> (HTTPServer, Int) {
    let group = try EventLoopGroup(threads: threads)
    let loopback = SocketAddress(numericHost: "127.0.0.1", port: 0)!
    let configuration = HTTPServer.Configuration(
        listen: tls == nil ? [loopback] : [], tlsListen: tls == nil ? [] : [loopback], tls: tls, limits: limits,
        http2: http2,
        http2Settings: http2Settings)
    let server = HTTPServer(configuration: configuration, group: group, handler: TestRoutes())
    try await server.start()
    let port = (tls == nil ? server.localAddresses : server.tlsLocalAddresses)[0].port
    return (server, port)
}

/// A test server on a TLS listener with a certificate for `localhost` and 127.0.0.1 made for it; the CA file clients
/// trust it by.
func startTLSTestServer() async throws -> (server: HTTPServer, port: Int, ca: String) {
    let (ca, cert, key) = try ProcessRunner.makeCertificates(in: ProcessRunner.temporaryDirectory())
    let tls = TLSServerConfiguration(
        defaultCertificate: TLSCertificateFiles(certificateChainPath: cert, privateKeyPath: key))
    let (server, port) = try await startTestServer(tls: tls)
    return (server, port, ca)
}
