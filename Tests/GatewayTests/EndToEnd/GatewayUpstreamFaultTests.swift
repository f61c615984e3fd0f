import Foundation
import HTTPClientCore
import HTTPWire
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The faulty upstreams of docs/reliability.md §2.5 (UP-04 .. UP-13), scripted in `faults/fault_upstream.py`, behind the
/// real `moya-gateway` binary: a client never gets a response that looks complete when the upstream's was not, bad
/// upstream framing is a 502, and the gateway keeps serving with no descriptor left behind.
@Suite(.serialized) struct GatewayUpstreamFaultTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/fault_upstream.py").path

    /// The fault upstream, a Python process on a free loopback port.
    final class FaultUpstream {
        let process = Process()
        let port: Int

        init() async throws {
            port = try freeLoopbackPort()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c", "exec /usr/bin/python3 \"$0\" --port \"$1\" >/dev/null 2>&1",
                GatewayUpstreamFaultTests.script, String(port)
            ]
            try ChildProcess.launch(process)
            let client = HTTPClient()
            for _ in 0..<100 {
                if (try? await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/ping")))?.status == 200 {
                    return
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw GatewayTestError("the fault upstream did not start")
        }

        deinit { ProcessRunner.stop(process) }
    }

    /// Every path to the fault upstream; `route` adds keys to the route (`retries: ...`).
    static func config(upstreamPort: Int, response: String = "1s", route: String = "") -> String {
        """
        \(GatewayProcess.listeners)
        upstreams:
          faulty: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { connect: 1s, response: \(response) } }
        routes:
          - { name: faulty, match: { path_prefix: / }, upstream: faulty\(route.isEmpty ? "" : ", " + route) }
        """
    }

    static func openDescriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    static func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func aStalledOrResetBodyIsNeverPassedOffAsComplete() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = HTTPClient()

        // UP-04, a body short enough to collect: nothing was sent yet, so the client gets a 504.
        var started = ContinuousClock.now
        let stalled = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stall-small"))
        #expect(stalled.status == 504)
        #expect(ContinuousClock.now - started < .seconds(4), "the upstream's 1 s response timeout, not its 20 s stall")

        // UP-04, a relayed body: the head went out, so the connection is cut without the body's end.
        started = ContinuousClock.now
        await #expect(throws: HTTPClientError.self) {
            _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stall-big"))
        }
        #expect(ContinuousClock.now - started < .seconds(4))

        // UP-05: a reset mid-body is a 502 before the head, and a cut connection after it.
        let reset = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/reset-small"))
        #expect(reset.status == 502)
        #expect(Self.text(reset).contains("\"error\":\"bad_gateway\""))
        await #expect(throws: HTTPClientError.self) {
            _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/reset-big"))
        }

        // The gateway serves on.
        #expect(Self.text(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/after"))) == "ok /after")
        gateway.stop()
    }

    /// The response direction of the hop-by-hop rules: the fields the upstream names in `Connection`, `Keep-Alive` and
    /// `Connection` itself stay behind; the gateway's `Via` follows the upstream's own, in the upstream's protocol.
    @Test func theUpstreamsHopByHopFieldsStayBehind() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let response = try await HTTPClient().execute(HTTPClientRequest(url: "\(gateway.url)/hop"))
        #expect(response.status == 200)
        #expect(Self.text(response) == "ok")
        for hop in ["X-Up-Hop", "Keep-Alive"] {
            #expect(!response.headers.contains(name: hop), "\(hop) is hop-by-hop: never returned")
        }
        #expect(!response.headers.containsToken("X-Up-Hop", name: "Connection"))
        #expect(response.headers["Via"].joined(separator: ", ") == "1.0 upstream-cache, 1.1 moya-gateway")
        gateway.stop()
    }

    /// Retries only when no response byte arrived: an upstream that sends nothing within the response timeout is tried
    /// again, one that sent part of its answer and then stalled is not (it may have acted on the request), though both
    /// are 504s.
    @Test func aRetryNeverFollowsAPartialAnswer() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(
            config: Self.config(upstreamPort: upstream.port, response: "300ms", route: "retries: { attempts: 3 }"))
        let client = HTTPClient()
        let partial = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stall-small-retried"))
        #expect(partial.status == 504)
        let silent = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/hang"))
        #expect(silent.status == 504)
        let hits = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(upstream.port)/hits"))
        let counts = try JSONSerialization.jsonObject(with: Data(hits.body)) as? [String: Int]
        #expect(counts?["/stall-small-retried"] == 1, "part of the answer arrived: not retried (\(Self.text(hits)))")
        #expect(counts?["/hang"] == 3, "nothing arrived: the first try and two retries (\(Self.text(hits)))")
        gateway.stop()
        let retries = Dictionary(
            gateway.accessLog.compactMap { line in
                (line["path"] as? String).map { ($0, line["retries"] as? Int ?? -1) }
            }, uniquingKeysWith: { first, _ in first })
        #expect(retries["/stall-small-retried"] == 0)
        #expect(retries["/hang"] == 2)
    }

    /// A client that closes its connection before the answer abandons the request: the upstream call is aborted
    /// (nginx's 499), not run to completion for nobody, and the access log says 499.
    @Test func aClientThatLeavesAbortsItsUpstreamCall() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port, response: "30s"))
        let client = HTTPClient()
        let leaver = try RawClient(port: gateway.port)
        leaver.send("GET /hang HTTP/1.1\r\nHost: t\r\n\r\n")
        try await Task.sleep(for: .milliseconds(300))
        let left = ContinuousClock.now
        close(leaver.fd)

        var aborted = 0
        while aborted == 0 && ContinuousClock.now - left < .seconds(4) {
            try await Task.sleep(for: .milliseconds(50))
            let hits = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(upstream.port)/hits"))
            let counts = try JSONSerialization.jsonObject(with: Data(hits.body)) as? [String: Int]
            aborted = counts?["aborted:/hang"] ?? 0
        }
        #expect(aborted == 1, "the upstream saw its request given up, before its own 5 s answer")

        // H1-40: a body cut short by the client's EOF is answered 400 and never forwarded as complete.
        let cut = try RawClient(port: gateway.port)
        cut.send("POST /cut HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabc")
        cut.shutdownWrite()
        let reply = cut.readAll(timeout: 3)
        #expect(String(decoding: reply.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 400"), "\(reply.bytes.count) bytes")
        #expect(reply.closed)
        let hits = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(upstream.port)/hits"))
        #expect(!Self.text(hits).contains("/cut"), "\(Self.text(hits))")
        #expect(Self.text(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/after"))) == "ok /after")
        gateway.stop()
        let record = try #require(gateway.accessLog.first { $0["path"] as? String == "/hang" })
        #expect(record["status"] as? Int == 499)
        #expect(record["upstream_error"] as? String == "cancelled")
    }

    /// A client that stops reading a relayed body and leaves: the upstream connection is closed at once, not held
    /// (paused, unread) until some timeout, whatever the relay was doing when the client went.
    @Test func aClientLeavingARelayedBodyClosesTheUpstreamConnection() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(
            config: """
                server: { listen: ["127.0.0.1:PORT"], threads: 2 }
                admin: { listen: "127.0.0.1:ADMIN" }
                upstreams:
                  faulty: { base_url: "http://127.0.0.1:\(upstream.port)", timeout: { response: 30s } }
                routes:
                  - { name: faulty, match: { path_prefix: / }, upstream: faulty }
                """)
        let client = HTTPClient()
        for round in 1...3 {
            let reader = try RawClient(port: gateway.port)
            reader.send("GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
            _ = reader.read(until: { $0.contains("\r\n\r\n") })
            // Not reading: the socket buffers, the relay's buffer and the upstream's fill up, then the client leaves.
            try await Task.sleep(for: .milliseconds(400))
            close(reader.fd)
            var aborted = 0
            let left = ContinuousClock.now
            while aborted < round && ContinuousClock.now - left < .seconds(5) {
                try await Task.sleep(for: .milliseconds(50))
                let hits = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(upstream.port)/hits"))
                aborted =
                    (try JSONSerialization.jsonObject(with: Data(hits.body)) as? [String: Int])?["aborted:/endless"]
                    ?? 0
            }
            #expect(aborted == round, "round \(round): the upstream's connection is closed once the client has gone")
        }
        gateway.stop()
    }

    /// RES-05: `pool.max_connections` bounds the connections to an upstream across all of the gateway's threads, and
    /// the requests beyond them wait (up to `max_wait`) instead of opening more.
    @Test func anUpstreamsConnectionLimitHoldsAcrossThreads() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                server: { listen: ["127.0.0.1:PORT"], threads: 2 }
                admin: { listen: "127.0.0.1:ADMIN" }
                upstreams:
                  small: { base_url: "http://127.0.0.1:\(upstream.port)", pool: { max_connections: 2, max_wait: 10s, http2: never } }
                routes:
                  - { name: small, match: { path_prefix: / }, upstream: small }
                """)
        let url = "\(gateway.url)/slow?ms=150"
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                // A client each: separate connections, spread over the gateway's two threads.
                group.addTask { (try? await HTTPClient().execute(HTTPClientRequest(url: url)))?.status ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(upstream.peakSlowInFlight == 2, "at most 2 upstream connections at once: \(upstream.peakSlowInFlight)")
        gateway.stop()
    }

    @Test func malformedUpstreamResponsesAre502() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = HTTPClient()
        // UP-06 and UP-09: bad status line, CL with TE, differing CLs, obs-fold, NUL, negative CL, TE other than
        // chunked, HTTP/0.9, an unrequested 101, a header past the limit.
        for path in [
            "/bad-status", "/cl-te", "/dup-cl", "/obs-fold", "/nul", "/neg-cl", "/te-gzip-chunked", "/http09",
            "/switch", "/huge-header"
        ] {
            let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)\(path)"))
            #expect(response.status == 502, "\(path)")
            #expect(Self.text(response).contains("\"error\":\"bad_gateway\""), "\(path)")
        }
        #expect(Self.text(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/after"))) == "ok /after")
        gateway.stop()
    }

    @Test func extraBytesAreDroppedAndCorruptGzipPassesThrough() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = HTTPClient()
        // UP-07: the bytes after a complete response never answer the next request (its connection is not reused).
        for round in 0..<5 {
            #expect(Self.text(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/extra"))) == "hello")
            let next = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/next-\(round)"))
            #expect(Self.text(next) == "ok /next-\(round)", "never the poisoned POISON")
        }
        // UP-13: the gateway does not decode upstream bodies; a corrupt gzip body is relayed as it came.
        let gzip = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/gzip-corrupt"))
        #expect(gzip.status == 200)
        #expect(gzip.headers.first(name: "Content-Encoding") == "gzip")
        #expect(Self.text(gzip) == "0123456789")
        gateway.stop()
    }

    @Test func anUpstreamClosingEveryConnectionLeavesNoDescriptorsBehind() async throws {
        let upstream = try await FaultUpstream()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = HTTPClient()
        let before = Self.openDescriptors(gateway.process.processIdentifier)
        // UP-12: `Connection: close` on every response, sequential and concurrent.
        for _ in 0..<50 {
            #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/close-each")).status == 200)
        }
        let url = "\(gateway.url)/close-each"
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { (try? await client.execute(HTTPClientRequest(url: url)))?.status ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        // The test's own keep-alive connections to the gateway go too: what is left is the gateway's.
        client.shutdown()
        var after = Self.openDescriptors(gateway.process.processIdentifier)
        for _ in 0..<50 where after > before + 2 {
            try await Task.sleep(for: .milliseconds(50))
            after = Self.openDescriptors(gateway.process.processIdentifier)
        }
        #expect(after <= before + 2, "descriptors before \(before), after \(after)")
        gateway.stop()
    }
}
