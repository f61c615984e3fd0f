import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Locking
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// RATE-01 .. RATE-07 through the real binary, with `min_rate_window: 2s` at the default 1 KiB/s: a reader that
/// trickles (HTTP/1.1 reading a few bytes every half second; HTTP/2 opening a stream's or the connection's window a byte
/// at a time) and a request body that trickles in (HTTP/1.1 and HTTP/2) are cut within the window; a slow upstream,
/// server-sent events and a fast download are not.
@Suite(.serialized) struct GatewayMinimumRateTests {
    static let window = 2.0

    static func config(
        upstreamPort: Int,
        limits: String = "{ min_send_rate: 1KiB, min_receive_rate: 1KiB/s, min_rate_window: 2s }"
    ) -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          limits: \(limits)
        admin:
          listen: "127.0.0.1:ADMIN"
        logging: { access_log: false }
        upstreams:
          up: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 30s } }
        routes:
          - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
        """
    }

    /// The gateway's `moya_gateway_min_rate_cuts_total` for `direction` and `protocol` (0 when not exported yet).
    static func cuts(_ gateway: GatewayProcess, _ direction: String, _ proto: String) async -> Int {
        let client = HTTPClient()
        defer { client.shutdown() }
        guard
            let response = try? await client.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics"))
        else {
            return -1
        }
        let text = String(decoding: response.body, as: UTF8.self)
        let prefix = "moya_gateway_min_rate_cuts_total{direction=\"\(direction)\",protocol=\"\(proto)\"} "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) }
            ?? 0
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/h2_abuse.py").path

    struct DripOutcome: Decodable {
        var status: String?
        var outcome: String
        var elapsed: Double
        var then: String?
        var goaway: GoAwayDetail?
        struct GoAwayDetail: Decodable {
            var code: String
            var debug: String
        }
    }

    static func drip(_ arguments: [String]) async throws -> (DripOutcome, String) {
        let output = try await offPool { try ProcessRunner.run("/usr/bin/python3", [script] + arguments, timeout: 60) }
        guard output.status == 0, let line = output.stdout.split(separator: "\n").last,
            let outcome = try? JSONDecoder().decode(DripOutcome.self, from: Data(line.utf8))
        else {
            throw GatewayTestError("h2_abuse.py \(arguments): \(output.stdout) \(output.stderr)")
        }
        return (outcome, String(line))
    }

    /// RATE-01: an HTTP/1.1 client that reads 16 bytes every half second of a 64 MiB answer is cut (its connection
    /// reset) about the window after the gateway's queue for it filled.
    @Test func aTricklingHTTP1ReaderIsCutWithinTheWindow() async throws {
        let upstream = try await RateUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = try RawClient(port: gateway.port)
        var small: Int32 = 4096
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let started = ContinuousClock.now
        client.send("GET /up/big?mb=64 HTTP/1.1\r\nHost: t\r\n\r\n")
        var cutAfter: Duration?
        var buffer = [UInt8](repeating: 0, count: 16)
        while cutAfter == nil, ContinuousClock.now - started < .seconds(Self.window + 4) {
            try await Task.sleep(for: .milliseconds(500))
            _ = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if await Self.cuts(gateway, "send", "http1") == 1 { cutAfter = ContinuousClock.now - started }
        }
        let cut = try #require(cutAfter, "the trickling reader was not cut")
        #expect(cut >= .seconds(Self.window * 0.75) && cut <= .seconds(Self.window + 2.5), "cut after \(cut)")
        // What is left in the socket ends short of the 64 MiB: the connection was cut, not finished.
        let (rest, closed) = client.readAll(timeout: 3)
        #expect(closed)
        #expect(rest.count < 16 << 20, "\(rest.count) bytes after the cut")
        // The upstream's answer itself is read at the upstream's pace (response buffering, on by default), so the cut
        // is the client's alone: nothing is asserted about how much of it the upstream produced.
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// RATE-02: an HTTP/1.1 request body sent a byte every half second gets 408 within the window.
    @Test func aTrickledHTTP1BodyGets408WithinTheWindow() async throws {
        let upstream = try await RateUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        var client: RawClient? = try RawClient(port: gateway.port)
        let started = ContinuousClock.now
        client?.send("POST /up/upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        var reply = ""
        while reply.isEmpty, ContinuousClock.now - started < .seconds(Self.window + 4) {
            client?.send("x")
            reply = client?.read(until: { !$0.isEmpty }, timeout: 0.5) ?? ""
        }
        let elapsed = ContinuousClock.now - started
        client = nil  // Closed: the gateway lingers on it until then.
        #expect(reply.hasPrefix("HTTP/1.1 408"), "\(reply)")
        #expect(elapsed <= .seconds(Self.window + 2.5), "answered after \(elapsed)")
        #expect(await Self.cuts(gateway, "receive", "http1") == 1)
        #expect(upstream.uploads == 0)
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// RATE-10: the rates are reloadable and apply to connections already open: a body trickling in while they are
    /// off is cut once a reload turns them on.
    @Test func aReloadAppliesTheRatesToOpenConnections() async throws {
        let upstream = try await RateUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.port,
                limits: "{ min_receive_rate: 0, min_rate_window: 2s }"))
        var client: RawClient? = try RawClient(port: gateway.port)
        client?.send("POST /up/upload HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        var reply = ""
        for _ in 0..<8 where reply.isEmpty {
            client?.send("x")
            reply = client?.read(until: { !$0.isEmpty }, timeout: 0.5) ?? ""
        }
        #expect(reply.isEmpty, "not cut while the rate is off: \(reply)")
        try await GatewayReloadSettingsTests.reload(gateway, to: Self.config(upstreamPort: upstream.port), count: 1)
        let reloaded = ContinuousClock.now
        while reply.isEmpty, ContinuousClock.now - reloaded < .seconds(Self.window + 4) {
            client?.send("x")
            reply = client?.read(until: { !$0.isEmpty }, timeout: 0.5) ?? ""
        }
        let elapsed = ContinuousClock.now - reloaded
        client = nil
        #expect(reply.hasPrefix("HTTP/1.1 408"), "\(reply)")
        #expect(elapsed <= .seconds(Self.window + 2.5), "answered \(elapsed) after the reload")
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// RATE-03, RATE-04: over HTTP/2 a stream whose window is opened a byte every half second is reset (CANCEL), and a
    /// connection whose window is held that way is told GOAWAY(ENHANCE_YOUR_CALM) naming the minimum rate.
    @Test func anHTTP2WindowOpenedAByteAtATimeIsCutWithinTheWindow() async throws {
        let upstream = try await RateUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let (stream, streamLine) = try await Self.drip([
            "window-drip", "--port", String(gateway.port), "--path", "/up/big?mb=64",
            "--scope", "stream", "--timeout", String(Self.window + 6)
        ])
        #expect(stream.status == "200", "\(streamLine)")
        #expect(stream.outcome == "rst CANCEL", "\(streamLine)")
        #expect(stream.elapsed <= Self.window + 3, "\(streamLine)")
        #expect(await Self.cuts(gateway, "send", "http2") == 1)
        let (whole, wholeLine) = try await Self.drip([
            "window-drip", "--port", String(gateway.port), "--path", "/up/big?mb=64",
            "--scope", "connection", "--timeout", String(Self.window + 6)
        ])
        #expect(whole.status == "200", "\(wholeLine)")
        #expect(whole.outcome == "goaway ENHANCE_YOUR_CALM", "\(wholeLine)")
        #expect(whole.goaway?.debug.contains("minimum send rate") == true, "\(wholeLine)")
        #expect(whole.elapsed <= Self.window + 3, "\(wholeLine)")
        #expect(await Self.cuts(gateway, "send", "http2") == 2)
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// RATE-05: an HTTP/2 request body sent a byte every half second gets 408, then RST_STREAM(NO_ERROR) for the rest.
    @Test func aTrickledHTTP2BodyGets408WithinTheWindow() async throws {
        let upstream = try await RateUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let (outcome, line) = try await Self.drip([
            "body-drip", "--port", String(gateway.port), "--path", "/up/upload",
            "--timeout", String(Self.window + 6)
        ])
        #expect(outcome.status == "408", "\(line)")
        #expect(outcome.elapsed <= Self.window + 2.5, "\(line)")
        #expect(outcome.then == "rst NO_ERROR", "\(line)")
        #expect(await Self.cuts(gateway, "receive", "http2") == 1)
        #expect(upstream.uploads == 0)
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }

    /// RATE-06, RATE-07: nothing waits on the client while the upstream thinks (an answer that takes longer than the
    /// window) or between server-sent events, and a client that reads as fast as it can takes a large answer whole:
    /// none of them is cut, over HTTP/1.1 or HTTP/2.
    @Test func slowUpstreamsEventStreamsAndFastDownloadsAreNotCut() async throws {
        let upstream = try await RateUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let base = gateway.url
        for version in ["--http1.1", "--http2-prior-knowledge"] {
            let slow = try await offPool {
                try ProcessRunner.run(
                    "curl",
                    [
                        "-sS", version, "-o", "/dev/null", "-w", "%{http_code}",
                        "\(base)/up/slow?ms=\(Int(Self.window * 1000) + 1000)"
                    ], timeout: 30)
            }
            #expect(slow.stdout == "200", "\(version) slow upstream: \(slow.stdout) \(slow.stderr)")
            let events = try await offPool {
                try ProcessRunner.run("curl", ["-sS", "-N", version, "\(base)/up/events?count=6&ms=500"], timeout: 30)
            }
            let lines = events.stdout.split(separator: "\n").filter { $0.hasPrefix("data: ") }
            #expect(lines.count == 6, "\(version) events: \(events.stdout) \(events.stderr)")
            let big = try await offPool {
                try ProcessRunner.run(
                    "curl",
                    [
                        "-sS", version, "-o", "/dev/null", "-w", "%{size_download}",
                        "\(base)/up/big?mb=16"
                    ], timeout: 60)
            }
            #expect(big.stdout == String(16 << 20), "\(version) download: \(big.stdout) \(big.stderr)")
        }
        for (direction, proto) in [("send", "http1"), ("send", "http2"), ("receive", "http1"), ("receive", "http2")] {
            #expect(await Self.cuts(gateway, direction, proto) == 0, "\(direction) \(proto)")
        }
        #expect(gateway.stop() == 0)
        await upstream.shutdown()
    }
}

/// The upstream of the minimum-rate tests: `/big?mb=N` streams N MiB with back-pressure, `/slow?ms=N` answers after N
/// ms, `/events?count=N&ms=M` sends N server-sent events M ms apart, anything else reads the body and answers `ok`.
final class RateUpstream: HTTPServerHandler {
    private let uploadsRead = Locked(0)
    private let serving = LoopbackServer()
    var port: Int { serving.port }
    /// Request bodies read to their end.
    var uploads: Int { uploadsRead.withLock { $0 } }

    static func start() async throws -> RateUpstream {
        let upstream = RateUpstream()
        try await upstream.serving.start(upstream)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let path = String(request.head.path)
        let query = request.head.query.map(String.init) ?? ""
        func parameter(_ name: String) -> Int? {
            query.split(separator: "&").first { $0.hasPrefix("\(name)=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
        }
        switch path {
        case "/big":
            let bytes = (parameter("mb") ?? 1) << 20
            return HTTPServerResponse(
                head: HTTPResponseHead(status: 200, headers: ["Content-Length": String(bytes)]),
                body: .stream(produce(bytes: bytes)))
        case "/slow":
            try? await Task.sleep(for: .milliseconds(parameter("ms") ?? 100))
            return HTTPServerResponse(status: 200, body: Array("slow".utf8))
        case "/events":
            let stream = ByteStream()
            let count = parameter("count") ?? 4
            let pause = parameter("ms") ?? 500
            Task {
                for index in 0..<count {
                    try? await Task.sleep(for: .milliseconds(pause))
                    _ = stream.yield(Array("data: event \(index)\n\n".utf8))
                }
                stream.finish()
            }
            return HTTPServerResponse(
                head: HTTPResponseHead(
                    status: 200,
                    headers: [
                        "Content-Type": "text/event-stream",
                        "Cache-Control": "no-cache"
                    ]),
                body: .stream(stream))
        default:
            guard (try? await request.body.collect(upTo: 1 << 24)) != nil else {
                return HTTPServerResponse(status: 400, body: Array("body failed".utf8))
            }
            uploadsRead.withLock { $0 += 1 }
            return HTTPServerResponse(status: 200, body: Array("ok".utf8))
        }
    }

    /// `bytes` of `x`, produced only as fast as the connection takes them.
    private func produce(bytes: Int) -> ByteStream {
        let (demand, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let stream = ByteStream(onDemand: { signal.yield() })
        Task {
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
            var iterator = demand.makeAsyncIterator()
            var sent = 0
            while sent < bytes, !stream.isFinished {
                sent += chunk.count
                if !stream.yield(chunk) { _ = await iterator.next() }
            }
            stream.finish()
        }
        return stream
    }
}
