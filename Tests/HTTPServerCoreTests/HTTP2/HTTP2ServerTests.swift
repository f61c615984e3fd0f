import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// HTTP/2 serving against real clients over loopback: curl, nghttp, h2load and Python `h2` scripts.
@Suite(.serialized) struct HTTP2ServerTests {
    /// The Python h2 client script next to this file.
    static let probeScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("h2/h2probe.py").path

    static func probe(_ port: Int, _ arguments: String..., timeout: Double = 30) throws -> ProcessRunner.Output {
        try ProcessRunner.run("/usr/bin/python3", [probeScript, String(port)] + arguments, timeout: timeout)
    }

    /// A handler that answers before the request body has all arrived: the client is asked to stop sending with
    /// RST_STREAM NO_ERROR after the whole response (RFC 9113 §8.1), as nginx and httpd do, instead of being left to
    /// upload a body nobody reads (curl before 8.11 then waits forever).
    @Test func anAnswerBeforeTheWholeBodyStopsTheUploadWithNoError() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let result = try Self.probe(port, "early", "/hello")
        #expect(result.stdout == "RESPONSE 200 hello\nRST 0\n", "\(result.stdout) \(result.stderr)")
    }

    /// RFC 8441: with `enableConnectProtocol` the server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL, and an extended
    /// CONNECT reaches the handler as the HTTP/1.1 upgrade it stands for; its 101 opens a tunnel over the stream (200
    /// to the client), which no body limit or body timeout cuts, and which ends when the client ends its side.
    @Test func anExtendedConnectIsAnUpgradeAndItsTunnelRunsOverTheStream() async throws {
        var settings = HTTP2Settings()
        settings.enableConnectProtocol = true
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 64 * 1024
        limits.bodyTimeout = .milliseconds(300)
        let (server, port) = try await startTestServer(limits: limits, http2Settings: settings)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let tunnel = try Self.probe(port, "tunnel", "/upgrade-echo", "echo-test")
        #expect(
            tunnel.stdout == "SETTING 1\nRESPONSE 200\nECHO \(300 * 1024 + 12) True\nSTREAM\n",
            "\(tunnel.stdout) \(tunnel.stderr)")

        // A handler's refusal goes out as it is; a 2xx that is not a switch would tell the client its tunnel is open.
        let refused = try Self.probe(port, "tunnel", "/upgrade-refuse", "echo-test")
        #expect(refused.stdout.hasPrefix("SETTING 1\nRESPONSE 426 "), "\(refused.stdout) \(refused.stderr)")
        let notATunnel = try Self.probe(port, "tunnel", "/hello", "echo-test")
        #expect(notATunnel.stdout == "SETTING 1\nRESPONSE 501 \n", "\(notATunnel.stdout) \(notATunnel.stderr)")
    }

    /// Without `enableConnectProtocol` (the default) nothing is advertised and an extended CONNECT is a malformed
    /// request: the stream is reset with PROTOCOL_ERROR and no handler sees it.
    @Test func anExtendedConnectIsRefusedUnlessEnabled() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let result = try Self.probe(port, "tunnel", "/upgrade-echo", "echo-test")
        #expect(result.stdout == "SETTING 0\nRST 1\n", "\(result.stdout) \(result.stderr)")
    }

    /// A declared body of at most 64 KiB left unread by an early answer is let in and dropped instead of stopped with
    /// RST_STREAM(NO_ERROR), which clients such as curl 7.88 take for an error, losing the answer; a longer one is
    /// stopped.
    @Test func aShortDeclaredBodyAfterAnEarlyAnswerIsDroppedWithoutAReset() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let short = try Self.probe(port, "early-declared", "/hello", "20000")
        #expect(short.stdout == "RESPONSE 200 hello\nQUIET\nDONE\n", "\(short.stdout) \(short.stderr)")
        let long = try Self.probe(port, "early-declared", "/hello", "1000000")
        #expect(long.stdout == "RESPONSE 200 hello\nRST 0\n", "\(long.stdout) \(long.stderr)")

        // A rest that never comes ends the stream at the body timeout.
        var limits = HTTPServerLimits()
        limits.bodyTimeout = .milliseconds(400)
        let (quick, quickPort) = try await startTestServer(limits: limits)
        defer { Task { await quick.shutdown(timeout: .seconds(1)) } }
        let stalled = try Self.probe(quickPort, "early-declared", "/hello", "20000", "stall")
        #expect(stalled.stdout == "RESPONSE 200 hello\nQUIET\nRST 0\n", "\(stalled.stdout) \(stalled.stderr)")
    }

    @Test func priorKnowledgeGetAndPostEcho() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let get = try ProcessRunner.run(
            "curl", ["-s", "-i", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/hello"])
        #expect(get.stdout.hasPrefix("HTTP/2 200"))
        #expect(get.stdout.contains("content-length: 5\r\n"))
        #expect(get.stdout.contains("date: "))
        #expect(!get.stdout.lowercased().contains("connection:"))
        #expect(!get.stdout.lowercased().contains("transfer-encoding:"))
        #expect(get.stdout.hasSuffix("\r\n\r\nhello"))

        let version = try ProcessRunner.run(
            "curl", ["-s", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/version"])
        #expect(version.stdout == "HTTP/2.0", "handlers see version 2")

        let post = try ProcessRunner.run(
            "curl",
            [
                "-s", "--http2-prior-knowledge", "--data-binary", "hello h2",
                "http://127.0.0.1:\(port)/echo", "-w", " %{http_version}"
            ])
        #expect(post.stdout == "hello h2 2")

        // Larger than the 64 KiB stream window: only flows if the server acknowledges what the handler takes.
        let big = String(repeating: "0123456789abcdef", count: 50_000)
        let file = ProcessRunner.temporaryDirectory() + "/body.txt"
        try Data(big.utf8).write(to: URL(fileURLWithPath: file))
        let echoed = try ProcessRunner.run(
            "curl",
            [
                "-s", "--http2-prior-knowledge", "--data-binary", "@\(file)",
                "http://127.0.0.1:\(port)/echo"
            ])
        #expect(echoed.stdout.count == big.count)
        #expect(echoed.stdout == big)

        let streamed = try ProcessRunner.run(
            "curl", ["-s", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/stream"])
        #expect(streamed.stdout == "one,two,three")
    }

    @Test func tlsNegotiatesH2WithALPN() async throws {
        let (server, port, ca) = try await startTLSTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let url = "https://localhost:\(port)"
        let resolve = ["--resolve", "localhost:\(port):127.0.0.1", "--cacert", ca]
        let h2 = try ProcessRunner.run("curl", ["-s", "--http2", "\(url)/version", "-w", " %{http_version}"] + resolve)
        #expect(h2.stdout == "HTTP/2.0 2")
        let post = try ProcessRunner.run(
            "curl", ["-s", "--http2", "--data-binary", "over tls", "\(url)/echo"] + resolve)
        #expect(post.stdout == "over tls")
        let h1 = try ProcessRunner.run(
            "curl", ["-s", "--http1.1", "\(url)/version", "-w", " %{http_version}"] + resolve)
        #expect(h1.stdout == "HTTP/1.1 1.1")
        let alpn = try ProcessRunner.run(
            "openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(port)", "-alpn", "h2,http/1.1",
                "-CAfile", ca
            ], input: Data("Q\n".utf8))
        #expect(alpn.stdout.contains("ALPN protocol: h2"))
    }

    @Test func nghttpSeesOurSettings() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let output = try ProcessRunner.run("nghttp", ["-nv", "http://127.0.0.1:\(port)/hello"])
        #expect(output.status == 0)
        // The server's SETTINGS frame: from "recv SETTINGS" (not the ACK) to the next frame line.
        let lines = output.stdout.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.contains("recv SETTINGS frame") && !$0.contains("flags=0x01") })
        let block = lines[(start + 1)...].prefix { !$0.hasPrefix("[") }
        #expect(block.contains { $0.contains("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100") })
        #expect(block.contains { $0.contains("SETTINGS_INITIAL_WINDOW_SIZE(0x04):65535") })
        #expect(block.contains { $0.contains("SETTINGS_MAX_HEADER_LIST_SIZE(0x06):32768") })
        #expect(output.stdout.contains(":status: 200"))
    }

    /// Response fields whose value is new in every message (`x-request-id`, `traceparent`) are sent never indexed, so
    /// they do not fill the connection's HPACK table; other fields are indexed, and upper-case names go out lower-cased.
    @Test func perMessageFieldsAreSentNeverIndexed() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        // Two requests on one connection (nghttp fetches a URL given twice once).
        let url = "http://127.0.0.1:\(port)/per-message-fields"
        let output = try ProcessRunner.run("nghttp", ["-nv", url, url + "?again"])
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n").map(String.init)
        func received(_ name: String) -> [String] {
            lines.filter { $0.contains("recv (stream_id=") && $0.contains(") \(name): ") }
        }
        #expect(received("x-request-id").count == 2)
        #expect(received("x-request-id").allSatisfy { $0.contains(", sensitive) x-request-id: req-") })
        #expect(received("traceparent").count == 2)
        #expect(received("traceparent").allSatisfy { $0.contains(", sensitive) traceparent: 00-") })
        #expect(received("x-plain").count == 2)
        #expect(received("x-plain").allSatisfy { !$0.contains("sensitive") })
        #expect(received("content-type").allSatisfy { !$0.contains("sensitive") })
    }

    @Test func h2loadCompletesEveryRequest() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let output = try ProcessRunner.run(
            "h2load", ["-n", "2000", "-c", "10", "-m", "10", "http://127.0.0.1:\(port)/hello"],
            timeout: 60)
        #expect(output.stdout.contains("2000 succeeded, 0 failed, 0 errored"), "\(output.stdout)")
        #expect(output.stdout.contains("status codes: 2000 2xx"))
    }

    @Test func http1StillWorksOnTheSameCleartextPort() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let curl = try ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(port)/version", "-w", " %{http_version}"])
        #expect(curl.stdout == "HTTP/1.1 1.1")
        // "POST" shares its first byte with the preface; send it split so the selector must wait and then decide.
        let client = try RawClient(port: port)
        client.send("P")
        try await Task.sleep(for: .milliseconds(50))
        client.send("OST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        let reply = client.read(until: { $0.hasSuffix("hello") })
        #expect(reply.hasPrefix("HTTP/1.1 200 OK"))
        // A prefix of the preface that then diverges is HTTP/1 too (and gets a 4xx, not a hang).
        let odd = try RawClient(port: port)
        odd.send("PRI /x HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(odd.read(until: { $0.contains("\r\n\r\n") }).hasPrefix("HTTP/1.1 404"))
    }

    @Test func http2CanBeTurnedOff() async throws {
        let (server, port) = try await startTestServer(http2: false)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let h2 = try ProcessRunner.run("curl", ["-s", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/hello"])
        #expect(h2.stdout != "hello")
        let h1 = try ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(port)/hello"])
        #expect(h1.stdout == "hello")
    }

    @Test func malformedRequestsAreResetWithProtocolError() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let output = try Self.probe(port, "malformed")
        #expect(output.status == 0, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("RST uppercase PROTOCOL_ERROR"), "\(output.stdout)")
        #expect(lines.contains("RST connection PROTOCOL_ERROR"), "\(output.stdout)")
        #expect(lines.contains("OK 200 hello"), "the connection survives malformed streams")
    }

    @Test func rapidResetBurstLeavesServerServing() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let id = "burst-\(UUID().uuidString)"
        let output = try Self.probe(port, "rapid-reset", id)
        #expect(output.status == 0, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        #expect(lines.last == "OK 200 hello", "\(output.stdout)")
        // Nothing of the burst is still running (each handler would wait 5 s): the reset streams' handlers were
        // cancelled or never started, and never more than MAX_CONCURRENT_STREAMS ran at once.
        try await Task.sleep(for: .milliseconds(300))
        #expect(await CancelProbe.shared.running(id) == 0)
        #expect(await CancelProbe.shared.peak(id) <= 100)
        #expect(server.openConnections == 0, "the burst's connection was closed")
    }

    @Test func handlersOfResetStreamsStillCountAgainstTheStreamLimit() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let id = "stubborn-\(UUID().uuidString)"
        let output = try Self.probe(port, "refuse", id)
        #expect(output.status == 0, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n").map(String.init)
        // 100 handlers ignore their cancellation: until they end, new streams are refused (retry-safe).
        #expect(lines.contains("REFUSED 20"), "\(output.stdout)")
        #expect(lines.contains("ANSWERED 0"), "\(output.stdout)")
        #expect(lines.last == "OK 200 hello", "served again once they finished: \(output.stdout)")
        #expect(await CancelProbe.shared.started(id) == 100)
        #expect(await CancelProbe.shared.peak(id) == 100)
        #expect(await CancelProbe.shared.state(id) == "cancelled", "the handlers were cancelled")
    }

    @Test func resetStreamCancelsTheHandler() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let id = UUID().uuidString
        let output = try Self.probe(port, "cancel", id)
        #expect(output.status == 0, "\(output.stderr)")
        let parts = output.stdout.split(separator: " ")
        #expect(parts.first == "RESULT")
        #expect(parts.dropFirst().first == "cancelled", "\(output.stdout)")
        // Observed well before the handler's 5 s sleep would have ended.
        let elapsed = Int(parts.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? .max
        #expect(elapsed < 3000)
        #expect(await CancelProbe.shared.state(id) == "cancelled")
    }

    /// Streams' handlers run in the loop's pooled worker tasks (``HTTP2StreamWorker``), not a new task each: one after
    /// another on a connection they share one task; after a reset stream cancelled its worker, a new one serves.
    @Test func consecutiveStreamsShareAWorkerTask() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        func taskIDs() throws -> [String] {
            let output = try Self.probe(port, "sequence", "/task-id", "3")
            return output.stdout.split(separator: "\n").map { String($0.dropFirst("BODY task ".count)) }
        }
        let first = try taskIDs()
        #expect(first.count == 3 && Set(first).count == 1, "\(first)")
        let reset = try Self.probe(port, "cancel", UUID().uuidString)
        #expect(reset.stdout.hasPrefix("RESULT cancelled"), "\(reset.stdout)")
        let after = try taskIDs()
        #expect(after.count == 3 && Set(after).count == 1, "\(after)")
    }

    @Test func gracefulShutdownFinishesStreamsInFlight() async throws {
        let (server, port) = try await startTestServer()
        let curl = Task {
            try await offPool {
                try ProcessRunner.run(
                    "curl",
                    [
                        "-s", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/slow?ms=600",
                        "-w", " %{http_version}"
                    ])
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        await server.shutdown(timeout: .seconds(5))
        let took = ContinuousClock.now - started
        let output = try await curl.value
        #expect(output.stdout == "slow 600 2")
        #expect(took < .seconds(3), "drain ends when the last stream is done, not at the timeout")
        #expect(server.openConnections == 0)
    }

    /// The drain's close lingers: a client that has not read the final GOAWAY yet goes on sending (acknowledgements,
    /// WINDOW_UPDATEs), and a socket closed with its bytes unread is reset, which can destroy the last answer before
    /// the client reads it. So the server ends its side once the last stream is answered, drops what the client
    /// still sends, and the drain ends when the client closes.
    @Test func theDrainsCloseLingersWhileTheClientIsStillSending() async throws {
        let (server, port) = try await startTestServer()
        let probe = Task { try await offPool { try Self.probe(port, "drain", "/slow?ms=400") } }
        try await Task.sleep(for: .milliseconds(200))
        await server.shutdown(timeout: .seconds(5))
        let output = try await probe.value
        #expect(output.stdout == "RESPONSE 200 slow 400\nGOAWAY 2147483647 1\nEOF\nSENT\n", "\(output.stderr)")
        #expect(server.openConnections == 0)
    }
}
