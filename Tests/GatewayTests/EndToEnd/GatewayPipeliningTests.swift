import Foundation
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

/// PIPE-01 and PIPE-02 through the real binary: unsafe requests pipelined on one HTTP/1.1 connection reach the upstream
/// in order, each after the previous one's answer (RFC 9112 §9.3.2), while a run of safe ones still overlaps.
@Suite(.serialized) struct GatewayPipeliningTests {
    static func config(upstreamPort: Int) -> String {
        GatewayProcess.listeners + """

            logging: { access_log: false }
            upstreams:
              up: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 10s } }
            routes:
              - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
            """
    }

    /// Sends `requests` in one write and reads `count` responses (they come back in order).
    static func pipeline(_ requests: [String], port: Int) throws -> [String] {
        let client = try RawClient(port: port)
        client.send(requests.joined())
        let text = client.read(
            until: { $0.components(separatedBy: "HTTP/1.1 ").count - 1 >= requests.count && $0.hasSuffix("done") },
            timeout: 10)
        return text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + $0 }
    }

    @Test func pipelinedUnsafeRequestsReachTheUpstreamInOrderOneAtATime() async throws {
        let upstream = try await TimingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let responses = try Self.pipeline(
            [
                "POST /up/slow?ms=400&n=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none",
                "PUT /up/put?n=2 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\ntwo",
                "DELETE /up/delete?n=3&last HTTP/1.1\r\nHost: t\r\n\r\n"
            ], port: gateway.port)
        #expect(responses.count == 3, "\(responses)")
        #expect(responses.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(responses)")
        #expect(
            responses.map { $0.components(separatedBy: "\r\n\r\n").last ?? "" } == ["POST 1", "PUT 2", "DELETE 3 done"])
        let seen = upstream.exchanges
        #expect(
            seen.map(\.method) == ["POST", "PUT", "DELETE"], "the upstream saw them in order: \(seen.map(\.method))")
        for (earlier, later) in zip(seen, seen.dropFirst()) {
            #expect(
                later.arrived > earlier.answered,
                "\(later.method) arrived \(Int64(bitPattern: later.arrived &- earlier.answered)) ns after \(earlier.method)'s answer"
            )
        }
        #expect(upstream.peakInFlight == 1)
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// Safe requests around an unsafe one: the GETs before it may overlap each other, the POST waits for both, and
    /// the GET after it waits for the POST.
    @Test func safeRunsOverlapAndAnUnsafeRequestSeparatesThem() async throws {
        let upstream = try await TimingUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let responses = try Self.pipeline(
            [
                "GET /up/slow?ms=500&n=1 HTTP/1.1\r\nHost: t\r\n\r\n",
                "GET /up/slow?ms=500&n=2 HTTP/1.1\r\nHost: t\r\n\r\n",
                "POST /up/post?n=3 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
                "GET /up/get?n=4&last HTTP/1.1\r\nHost: t\r\n\r\n"
            ], port: gateway.port)
        #expect(responses.count == 4, "\(responses)")
        let seen = upstream.exchanges
        #expect(seen.map(\.n) == [1, 2, 3, 4] || seen.map(\.n) == [2, 1, 3, 4], "\(seen.map(\.n))")
        let gets = seen.filter { $0.n <= 2 }
        let post = try #require(seen.first { $0.n == 3 })
        let last = try #require(seen.first { $0.n == 4 })
        #expect(gets.allSatisfy { $0.answered < post.arrived }, "the POST waited for both GETs")
        #expect(post.answered < last.arrived, "the GET after the POST waited for it")
        #expect(upstream.peakInFlight == 2, "the two GETs overlapped, as pipelined safe requests may")
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }
}

/// An upstream that records when each request arrived and when its answer was ready (monotonic nanoseconds):
/// `/slow?ms=N` waits N ms; every answer is `<METHOD> <n>` (and ` done` for a request with `last` in its query).
final class TimingUpstream: HTTPServerHandler {
    struct Exchange: Sendable {
        var method: String
        var n: Int
        var arrived: UInt64
        var answered: UInt64
    }

    private let state = Locked((exchanges: [Exchange](), inFlight: 0, peak: 0))
    private let serving = LoopbackServer()
    var port: Int { serving.port }
    var exchanges: [Exchange] { state.withLock { $0.exchanges }.sorted { $0.arrived < $1.arrived } }
    var peakInFlight: Int { state.withLock { $0.peak } }

    static func start() async throws -> TimingUpstream {
        let upstream = TimingUpstream()
        try await upstream.serving.start(upstream)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let arrived = EventLoop.now()
        state.withLock {
            $0.inFlight += 1
            $0.peak = max($0.peak, $0.inFlight)
        }
        _ = try? await request.body.collect(upTo: 1 << 20)
        let query = request.head.query.map(String.init) ?? ""
        let parameters = query.split(separator: "&")
        func value(_ name: String) -> Int? {
            parameters.first { $0.hasPrefix("\(name)=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
        }
        if request.head.path.hasSuffix("/slow") { try? await Task.sleep(for: .milliseconds(value("ms") ?? 100)) }
        let method = request.head.method.rawValue
        let n = value("n") ?? 0
        state.withLock {
            $0.inFlight -= 1
            $0.exchanges.append(Exchange(method: method, n: n, arrived: arrived, answered: EventLoop.now()))
        }
        let body = "\(method) \(n)" + (parameters.contains("last") ? " done" : "")
        return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array(body.utf8))
    }
}
