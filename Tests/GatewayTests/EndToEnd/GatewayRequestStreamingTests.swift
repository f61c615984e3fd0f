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

/// Long and open-ended client bodies go upstream as they arrive: intact with their framing, read by the upstream
/// while the client is still sending, held back by a stalled upstream, bounded by `max_body_bytes`, and never sent
/// twice.
@Suite(.serialized) struct GatewayRequestStreamingTests {
    static func config(upstreamPort: Int, maxBody: String = "512MiB") -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          limits: { max_body_bytes: \(maxBody) }
        admin:
          listen: "127.0.0.1:ADMIN"
        upstreams:
          up: { base_url: "http://127.0.0.1:\(upstreamPort)", timeout: { response: 20s } }
          dead: { base_url: "http://127.0.0.1:1" }
        routes:
          - { name: dead, match: { path_prefix: /dead }, upstream: dead, retries: { attempts: 3 } }
          - name: retried
            match: { path_prefix: /retried }
            upstream: up
            rewrite: { strip_prefix: /retried }
            retries: { attempts: 3, statuses: [503] }
          - { name: up, match: { path_prefix: /up }, upstream: up, rewrite: { strip_prefix: /up } }
        """
    }

    /// SLOW-02: a client that stops sending its body gets 408 at the body timeout (its request already went upstream
    /// as it arrived), the upstream request is aborted, never completed, and the access log says 408 with the bytes
    /// that arrived. A short body (collected, not relayed) that stalls is logged the same way.
    @Test func aStalledBodyIsAnswered408AndItsUpstreamRequestAborted() async throws {
        let upstream = try await UploadUpstream.start()
        let config = Self.config(upstreamPort: upstream.port)
            .replacingOccurrences(
                of: "limits: { max_body_bytes: 512MiB }", with: "limits: { max_body_bytes: 512MiB, body_timeout: 1s }")
        let gateway = try await GatewayProcess(config: config)
        let client = try RawClient(port: gateway.port)
        client.send(
            "POST /up/slow HTTP/1.1\r\nHost: t\r\nX-Request-Id: slow-1\r\nContent-Length: 1048576\r\n\r\n"
                + String(repeating: "a", count: 100))
        let shortClient = try RawClient(port: gateway.port)
        shortClient.send(
            "POST /up/short HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "b", count: 60))
        let started = ContinuousClock.now
        let reply = client.readAll(timeout: 5)
        let text = String(decoding: reply.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 408"), "\(text)")
        #expect(text.contains("X-Request-Id: slow-1\r\n"), "\(text)")
        #expect(
            text.hasSuffix("{\"error\":\"bad_request\",\"request_id\":\"slow-1\"}"), "the gateway's error body: \(text)"
        )
        #expect(reply.closed)
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(upstream.uploads.isEmpty, "the upstream never saw the body end")
        let shortText = String(decoding: shortClient.readAll(timeout: 5).bytes, as: UTF8.self)
        #expect(shortText.hasPrefix("HTTP/1.1 408"), "\(shortText)")
        gateway.stop()
        let record = try #require(gateway.accessLog.first { $0["path"] as? String == "/up/slow" })
        #expect(record["status"] as? Int == 408)
        #expect(record["request_id"] as? String == "slow-1")
        #expect(record["bytes_in"] as? Int == 100, "\(record)")
        let short = try #require(gateway.accessLog.first { $0["path"] as? String == "/up/short" })
        #expect(short["status"] as? Int == 408)
        #expect(short["bytes_in"] as? Int == 60, "\(short)")
    }

    @Test func longBodiesArriveIntactWithTheirFramingOverHTTP1AndHTTP2() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let size = 32 << 20
        let file = try Self.patternFile(bytes: size)
        let expected = UploadUpstream.checksum(of: try [UInt8](Data(contentsOf: URL(fileURLWithPath: file))))
        let declared = "-X PUT --data-binary @\(file)"
        let fromStdin = "-T - <\(file)"
        let runs: [(flags: String, chunked: Bool)] = [
            ("--http1.1 \(declared)", false), ("--http2-prior-knowledge \(declared)", false),
            ("--http1.1 \(fromStdin)", true), ("--http2-prior-knowledge \(fromStdin)", true)
        ]
        for run in runs {
            let curl = try ProcessRunner.run(
                "sh", ["-c", "curl -sS -H 'Expect:' \(run.flags) '\(gateway.url)/up/upload'"])
            #expect(curl.stdout == "bytes=\(size) sum=\(expected)", "\(run.flags): \(curl.stdout) \(curl.stderr)")
            let received = upstream.uploads.last
            #expect(received?.bytes == size)
            if run.chunked {
                #expect(
                    received?.contentLength == nil && received?.transferEncoding == "chunked",
                    "an open-ended body goes on chunked: \(String(describing: received))")
            } else {
                #expect(
                    received?.contentLength == String(size) && received?.transferEncoding == nil,
                    "a declared length goes on as Content-Length: \(String(describing: received))")
            }
        }
        gateway.stop()
        let logged = gateway.accessLog.compactMap { $0["bytes_in"] as? Int }
        #expect(logged == [size, size, size, size], "bytes_in counts the relayed bytes: \(logged)")
        await upstream.shutdown()
    }

    @Test func theUpstreamReadsTheBodyWhileTheClientIsStillSending() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = try RawClient(port: gateway.port)
        let total = 4 << 20
        let first = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20)
        client.send("POST /up/upload HTTP/1.1\r\nHost: t\r\nContent-Length: \(total)\r\n\r\n")
        client.send(first)
        var seen = 0
        for _ in 0..<100 where seen < first.count {
            try await Task.sleep(for: .milliseconds(50))
            seen = upstream.bytesInFlight
        }
        #expect(seen == first.count, "the upstream got the first MiB before the client sent the rest: \(seen)")
        client.send([UInt8](repeating: UInt8(ascii: "a"), count: total - first.count))
        let response = client.read(until: { $0.contains("sum=") }, timeout: 10)
        #expect(response.hasPrefix("HTTP/1.1 200"))
        #expect(response.contains("bytes=\(total)"), "\(response)")
        gateway.stop()
        await upstream.shutdown()
    }

    @Test func aStalledUpstreamHoldsTheClientBack() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let residentBefore = GatewayHTTP2ConformanceTests.residentKiB(gateway.process.processIdentifier)
        let client = try RawClient(port: gateway.port)
        // Under the route's 512 MiB limit (a larger declared length would be refused at the head instead).
        let declared = 256 << 20
        client.send("POST /up/stall?ms=4000 HTTP/1.1\r\nHost: t\r\nContent-Length: \(declared)\r\n\r\n")
        // Write without blocking until nothing more is taken for a second.
        let chunk = [UInt8](repeating: UInt8(ascii: "s"), count: 64 * 1024)
        var written = 0
        var lastProgress = ContinuousClock.now
        while ContinuousClock.now - lastProgress < .seconds(1), written < declared {
            let sent = chunk.withUnsafeBytes {
                Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent > 0 {
                written += sent
                lastProgress = .now
            } else {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let residentDuring = GatewayHTTP2ConformanceTests.residentKiB(gateway.process.processIdentifier)
        #expect(written < 64 << 20, "the client was held back while the upstream read nothing: \(written) bytes taken")
        #expect(
            residentDuring - residentBefore < 32 * 1024,
            "the gateway buffered little: RSS \(residentBefore) → \(residentDuring) KiB with \(written) bytes taken")
        shutdown(client.fd, Int32(SHUT_RDWR))
        gateway.stop()
        await upstream.shutdown()
    }

    @Test func anUpstreamThatAnswersEarlyEndsTheUploadAndTheConnectionGoesOn() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let client = try RawClient(port: gateway.port)
        let total = 8 << 20
        let chunk = [UInt8](repeating: UInt8(ascii: "r"), count: 64 * 1024)
        client.send("PUT /up/refuse HTTP/1.1\r\nHost: t\r\nContent-Length: \(total)\r\n\r\n")
        client.send(chunk)
        let refused = client.read(until: { $0.contains("refused") }, timeout: 10)
        #expect(refused.hasPrefix("HTTP/1.1 413"), "the upstream's early answer reaches the client: \(refused)")
        for _ in 1..<(total / chunk.count) { client.send(chunk) }
        client.send("GET /up/upload HTTP/1.1\r\nHost: t\r\n\r\n")
        let next = client.read(until: { $0.contains("sum=") }, timeout: 10)
        #expect(next.hasPrefix("HTTP/1.1 200"), "the rest of the body was dropped and the next request served: \(next)")
        gateway.stop()
        await upstream.shutdown()
    }

    /// A body the server gives up on while it is relayed upstream (over the limit, or its chunk framing broken) gets
    /// the gateway's JSON error with the request id, in the body, the `X-Request-Id` header and one access-log line.
    /// (HTTP/2 takes the same path through the handler: `HTTPServerTests` covers its server side.)
    @Test func anOpenEndedBodyPastTheLimitOrMalformedGetsTheGatewaysErrorWithItsRequestID() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port, maxBody: "1MiB"))
        let client = try RawClient(port: gateway.port)
        client.send("POST /up/upload HTTP/1.1\r\nHost: t\r\nX-Request-Id: big-1\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = [UInt8](repeating: UInt8(ascii: "c"), count: 64 * 1024)
        for _ in 0..<20 {
            client.send(Array("10000\r\n".utf8) + chunk + Array("\r\n".utf8))
        }
        let response = client.read(until: { $0.contains("\r\n\r\n") && $0.contains("}") }, timeout: 10)
        #expect(response.hasPrefix("HTTP/1.1 413"), "\(response)")
        #expect(response.contains("X-Request-Id: big-1\r\n"), "\(response)")
        #expect(response.hasSuffix("{\"error\":\"payload_too_large\",\"request_id\":\"big-1\"}"), "\(response)")
        #expect(!upstream.uploads.contains { $0.bytes > 1 << 20 }, "nothing past the limit reached the upstream")

        let broken = try RawClient(port: gateway.port)
        broken.send(
            "POST /up/upload HTTP/1.1\r\nHost: t\r\nX-Request-Id: bad-1\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "4\r\nabcd\r\nzz\r\n")
        let brokenReply = broken.readAll(timeout: 5)
        let brokenText = String(decoding: brokenReply.bytes, as: UTF8.self)
        #expect(brokenText.hasPrefix("HTTP/1.1 400"), "\(brokenText)")
        #expect(brokenText.hasSuffix("{\"error\":\"bad_request\",\"request_id\":\"bad-1\"}"), "\(brokenText)")
        #expect(brokenReply.closed)

        gateway.stop()
        let statuses = Dictionary(
            gateway.accessLog.compactMap { line in
                (line["request_id"] as? String).map { ($0, line["status"] as? Int ?? 0) }
            }, uniquingKeysWith: { first, _ in first })
        #expect(statuses["big-1"] == 413 && statuses["bad-1"] == 400, "\(statuses)")
        #expect(
            gateway.accessLog.filter { ["big-1", "bad-1"].contains($0["request_id"] as? String ?? "") }.count == 2,
            "one line each")
        await upstream.shutdown()
    }

    /// A route's `max_body_bytes` is its own limit, above or below `server.limits.max_body_bytes`, declared or
    /// chunked, over HTTP/1.1 and HTTP/2. A declared length past it is refused before a byte is read, and the
    /// HTTP/1.1 connection closes rather than read the rest.
    @Test func aRoutesOwnBodyLimitIsAboveOrBelowTheServers() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  limits: { max_body_bytes: 32KiB }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  up: { base_url: "http://127.0.0.1:\(upstream.port)" }
                routes:
                  - { name: upload, match: { path_prefix: /upload }, upstream: up, max_body_bytes: 8MiB }
                  - { name: small, match: { path_prefix: /small }, upstream: up, max_body_bytes: 1KiB }
                  - { name: up, match: { path_prefix: /up }, upstream: up }
                """)
        let big = try Self.patternFile(bytes: 4 << 20)
        // Small enough to be sent whole within HTTP/2's first window: curl 7.88 takes the RST_STREAM(NO_ERROR) that
        // stops a larger upload after its answer (RFC 9113 §8.1) for an error and drops the answer.
        let medium = try Self.patternFile(bytes: 48 * 1024)
        let small = try Self.patternFile(bytes: 2048)
        let bigSum = UploadUpstream.checksum(of: try [UInt8](Data(contentsOf: URL(fileURLWithPath: big))))
        func curl(_ flags: String, _ path: String) throws -> String {
            try ProcessRunner.run(
                "sh", ["-c", "curl -sS -H 'Expect:' -w ' %{http_code}' \(flags) '\(gateway.url)\(path)'"]
            ).stdout
        }
        for version in ["--http1.1", "--http2-prior-knowledge"] {
            #expect(
                try curl("\(version) -X PUT --data-binary @\(big)", "/upload/x")
                    == "bytes=\(4 << 20) sum=\(bigSum) 200",
                "\(version): 4 MiB on a route that takes 8 MiB, above the server's 32 KiB")
            #expect(try curl("\(version) -T - <\(big)", "/upload/x").hasSuffix(" 200"), "\(version): chunked too")
            #expect(
                try curl("\(version) -X PUT --data-binary @\(small)", "/small/x").hasSuffix(" 413"),
                "\(version): 2 KiB past the route's 1 KiB")
            let chunked = try curl("\(version) -T - <\(small)", "/small/x")
            // Over HTTP/2 the answer is followed by RST_STREAM(NO_ERROR) when the body has not ended (RFC 9113 §8.1):
            // curl 7.88 drops the answer when that reset arrives before it has sent its END_STREAM, which depends on
            // timing. The gateway's 413 is then read from its access log below.
            #expect(
                chunked.hasSuffix(" 413") || (version == "--http2-prior-knowledge" && chunked.hasSuffix(" 000")),
                "\(version): chunked past it too: \(chunked)")
            #expect(
                try curl("\(version) -X PUT --data-binary @\(medium)", "/up/x").hasSuffix(" 413"),
                "\(version): a route without its own limit keeps the server's 32 KiB")
        }
        #expect(
            upstream.uploads.allSatisfy { $0.bytes == 4 << 20 || $0.bytes <= 1024 }, "\(upstream.uploads.map(\.bytes))")
        #expect(upstream.uploads.filter { $0.bytes == 4 << 20 }.count == 4)

        // Refused at its head: the answer comes at once and the connection is closed, the body unread.
        let client = try RawClient(port: gateway.port)
        client.send("POST /small/x HTTP/1.1\r\nHost: t\r\nX-Request-Id: small-1\r\nContent-Length: 1000000\r\n\r\n")
        let refused = client.readAll(timeout: 5)
        let text = String(decoding: refused.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 413"), "\(text)")
        #expect(text.contains("\r\nConnection: close\r\n"))
        #expect(text.hasSuffix("{\"error\":\"payload_too_large\",\"request_id\":\"small-1\"}"), "\(text)")
        #expect(refused.closed)
        gateway.stop()
        #expect(gateway.accessLog.first { $0["request_id"] as? String == "small-1" }?["route"] as? String == "small")
        let refusedPuts = gateway.accessLog.filter {
            $0["method"] as? String == "PUT" && $0["path"] as? String == "/small/x" && $0["status"] as? Int == 413
        }
        #expect(refusedPuts.count == 4, "declared and chunked, over HTTP/1.1 and HTTP/2: every PUT past 1 KiB is a 413")
        await upstream.shutdown()
    }

    @Test func aRelayedBodyIsNeverSentTwiceButACollectedOneOrAnUnstartedOneIsRetried() async throws {
        let upstream = try await UploadUpstream.start()
        let gateway = try await GatewayProcess(config: Self.config(upstreamPort: upstream.port))
        let long = try Self.patternFile(bytes: 1 << 20)
        let relayed = try ProcessRunner.run(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "-H", "Expect:",
                "--data-binary", "@\(long)", "\(gateway.url)/retried/unavailable"
            ])
        #expect(relayed.stdout == "503")
        #expect(upstream.uploads.count == 1, "a relayed body is sent once: \(upstream.uploads.count)")
        let collected = try ProcessRunner.run(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT",
                "--data-binary", "short", "\(gateway.url)/retried/unavailable"
            ])
        #expect(collected.stdout == "503")
        #expect(upstream.uploads.count == 4, "a collected body is retried: \(upstream.uploads.count)")
        let refused = try ProcessRunner.run(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "-H", "Expect:",
                "-H", "X-Request-Id: dead-1", "--data-binary", "@\(long)",
                "\(gateway.url)/dead/x"
            ])
        #expect(refused.stdout == "502")
        gateway.stop()
        let dead = gateway.accessLog.first { $0["request_id"] as? String == "dead-1" }
        #expect(
            dead?["retries"] as? Int == 2,
            "a relayed body that never started to flow is retried: \(String(describing: dead))")
        await upstream.shutdown()
    }

    /// A file of `bytes` varied bytes (so a misplaced chunk changes the checksum).
    static func patternFile(bytes: Int) throws -> String {
        let path = ProcessRunner.temporaryDirectory("upload") + "/body.bin"
        var data = [UInt8](repeating: 0, count: bytes)
        var state: UInt32 = 2_463_534_242
        for index in data.indices {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            data[index] = UInt8(truncatingIfNeeded: state)
        }
        try Data(data).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// An upstream that reads request bodies and answers with their length and checksum (`bytes=N sum=S`), recording
/// the framing each arrived with. `/stall?ms=N` waits before reading; `/unavailable` answers 503 after reading;
/// `/refuse` answers 413 without reading.
final class UploadUpstream: HTTPServerHandler {
    struct Upload: Sendable {
        var contentLength: String?
        var transferEncoding: String?
        var bytes: Int
    }

    private struct State {
        var uploads: [Upload] = []
        var inFlight = 0
    }

    private let state = Locked(State())
    private let serving = LoopbackServer()

    var port: Int { serving.port }
    var uploads: [Upload] { state.withLock { $0.uploads } }
    /// Bytes of the request being read so far.
    var bytesInFlight: Int { state.withLock { $0.inFlight } }

    static func start() async throws -> UploadUpstream {
        let upstream = UploadUpstream()
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 1 << 30
        try await upstream.serving.start(upstream, limits: limits)
        return upstream
    }

    func shutdown() async { await serving.shutdown() }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let head = request.head
        if head.path == "/refuse" {
            return HTTPServerResponse(status: 413, headers: ["Content-Type": "text/plain"], body: Array("refused".utf8))
        }
        if head.path == "/stall" {
            let ms = head.query.flatMap { Int($0.dropFirst("ms=".count)) } ?? 1000
            try? await Task.sleep(for: .milliseconds(ms))
        }
        state.withLock { $0.inFlight = 0 }
        var count = 0
        var sum: UInt64 = 0
        do {
            for try await chunk in request.body {
                for byte in chunk { sum = sum &* 31 &+ UInt64(byte) }
                count += chunk.count
                state.withLock { $0.inFlight = count }
            }
        } catch {
            return HTTPServerResponse(status: 400, headers: [:], body: Array("body failed".utf8))
        }
        let upload = Upload(
            contentLength: head.headers.first(name: "Content-Length"),
            transferEncoding: head.headers.first(name: "Transfer-Encoding"), bytes: count)
        state.withLock { $0.uploads.append(upload) }
        let status = head.path == "/unavailable" ? 503 : 200
        return HTTPServerResponse(
            status: status, headers: ["Content-Type": "text/plain"], body: Array("bytes=\(count) sum=\(sum)".utf8))
    }

    /// The checksum the upstream reports for `bytes`.
    static func checksum(of bytes: [UInt8]) -> UInt64 {
        var sum: UInt64 = 0
        for byte in bytes { sum = sum &* 31 &+ UInt64(byte) }
        return sum
    }
}
