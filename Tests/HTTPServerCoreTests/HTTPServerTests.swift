import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

@Suite(.serialized) struct HTTPServerTests {
    @Test func curlGetsHelloWithDateAndLength() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let output = try ProcessRunner.run("curl", ["-s", "-i", "http://127.0.0.1:\(port)/hello"])
        #expect(output.stdout.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(output.stdout.contains("Content-Length: 5\r\n"))
        #expect(output.stdout.hasSuffix("\r\n\r\nhello"))
        let dateLine = output.stdout.split(separator: "\r\n").first { $0.hasPrefix("Date: ") }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = try #require(dateLine.flatMap { formatter.date(from: String($0.dropFirst(6))) })
        #expect(abs(date.timeIntervalSinceNow) < 2)
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        for _ in 0..<3 {
            client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            let reply = client.read(until: { $0.hasSuffix("hello") })
            #expect(reply.hasPrefix("HTTP/1.1 200 OK"))
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(
            "GET /slow?ms=150 HTTP/1.1\r\nHost: x\r\n\r\nGET /target?n=2 HTTP/1.1\r\nHost: x\r\n\r\nGET /target?n=3 HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        let reply = client.read(until: { $0.contains("/target?n=3") })
        let slow = try #require(reply.range(of: "slow 150"))
        let second = try #require(reply.range(of: "/target?n=2"))
        let third = try #require(reply.range(of: "/target?n=3"))
        #expect(slow.lowerBound < second.lowerBound && second.lowerBound < third.lowerBound)
    }

    @Test func smugglingAttemptGets400AndClose() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        let (bytes, closed) = client.readAll()
        let reply = String(decoding: bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 400 "))
        #expect(reply.contains("Connection: close"))
        #expect(reply.occurrences(of: "HTTP/1.1") == 1)
        #expect(closed)
    }

    @Test func postBodiesAreEchoedForLengthAndChunked() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world")
        #expect(client.read(until: { $0.hasSuffix("hello world") }).contains("Content-Length: 11"))
        client.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        )
        #expect(client.read(until: { $0.hasSuffix("hello world") }).hasSuffix("hello world"))
        let big = String(repeating: "abcdefgh", count: 100_000)
        let output = try ProcessRunner.run(
            "curl", ["-s", "--data-binary", "@-", "http://127.0.0.1:\(port)/echo"], input: Data(big.utf8))
        #expect(output.stdout == big)
    }

    @Test func expectContinueGets100First() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(client.read(until: { $0.contains("\r\n\r\n") }).hasPrefix("HTTP/1.1 100 Continue\r\n\r\n"))
        client.send("12345")
        #expect(client.read(until: { $0.hasSuffix("12345") }).hasPrefix("HTTP/1.1 200 OK"))
        let other = try RawClient(port: port)
        other.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: foo\r\n\r\n")
        #expect(other.readAll().bytes.starts(with: Array("HTTP/1.1 417".utf8)))
    }

    @Test func headHas204And304SemanticsWithoutBody() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.read(until: { $0.hasSuffix("hello") })
        #expect(reply.occurrences(of: "Content-Length: 5") == 2)
        #expect(reply.occurrences(of: "hello") == 1)
    }

    @Test func limitsAnswer413And414And431() async throws {
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 100
        limits.maxRequestLineBytes = 200
        limits.maxHeaders = 5
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let cases: [(String, String)] = [
            ("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n", "413"),
            ("GET /\(String(repeating: "a", count: 300)) HTTP/1.1\r\nHost: x\r\n\r\n", "414"),
            ("GET / HTTP/1.1\r\nHost: x\r\n" + (0..<10).map { "X-\($0): y\r\n" }.joined() + "\r\n", "431"),
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", "505")
        ]
        for (request, status) in cases {
            let client = try RawClient(port: port)
            client.send(request)
            let (bytes, closed) = client.readAll()
            #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 \(status) "), "\(status)")
            #expect(closed)
        }
    }

    /// A handler that answers rejections itself: its body and headers go out with the server's status, over HTTP/1.1
    /// (the head was not read) and HTTP/2 (a declared body over the limit: the answer arrives whole, then the upload is
    /// stopped with NO_ERROR).
    @Test func aHandlerShapesTheAnswersToRejectedRequests() async throws {
        struct Shaping: HTTPServerHandler {
            func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
                HTTPServerResponse(status: 200, body: [])
            }
            func rejected(_ rejection: HTTPServerRejection) -> HTTPServerResponse {
                let target = rejection.head?.target ?? "-"
                return HTTPServerResponse(
                    status: 599, headers: ["X-Rejected": "yes"],
                    body: Array("refused \(rejection.status) \(target)".utf8))
            }
        }
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 100
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!], limits: limits),
            group: try EventLoopGroup(threads: 1), handler: Shaping())
        try await server.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let port = server.localAddresses[0].port
        let client = try RawClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n")
        let reply = String(decoding: client.readAll().bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 400 "), "the status stays the server's: \(reply)")
        #expect(reply.contains("X-Rejected: yes"))
        #expect(reply.hasSuffix("refused 400 -"))
        // nghttp, not curl: curl before 8.11 reports the RST_STREAM NO_ERROR that stops the upload as an error (92)
        // when it arrives while curl is still sending.
        let upload = ProcessRunner.temporaryDirectory("rejected") + "/body"
        try Data(repeating: 0x78, count: 4096).write(to: URL(fileURLWithPath: upload))
        let h2 = try ProcessRunner.run("nghttp", ["-v", "-d", upload, "http://127.0.0.1:\(port)/upload"])
        #expect(h2.stdout.contains(":status: 413") && h2.stdout.contains("x-rejected: yes"), "\(h2.stdout)")
        #expect(h2.stdout.contains("refused 413 /upload"), "\(h2.stdout)")
        #expect(
            h2.stdout.contains("RST_STREAM") && h2.stdout.contains("error_code=NO_ERROR"),
            "the upload is stopped: \(h2.stdout)")
    }

    @Test func aBodyThatFailsMidWayGetsOneResponseOnly() async throws {
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 100
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        // The handler is reading the body when the chunked body goes past the limit, or its chunk framing breaks:
        // the request gets the error in place of the handler's answer, and nothing after it.
        let cases: [(String, String)] = [
            (
                "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n"
                    + "64\r\n" + String(repeating: "z", count: 100) + "\r\n", "413"
            ),
            ("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\nzz\r\n", "400")
        ]
        for (request, status) in cases {
            let client = try RawClient(port: port)
            client.send(request)
            let (bytes, closed) = client.readAll()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 \(status) "), "\(status): \(text)")
            #expect(
                text.hasSuffix("echo failed \(status)"),
                "the cancelled handler's answer, with the server's status: \(text)")
            #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one response: \(text)")
            #expect(closed)
        }
        // A handler that does not answer its cancelled request in time gets the server's own error instead.
        let deaf = try RawClient(port: port)
        let started = ContinuousClock.now
        deaf.send("POST /deaf HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\nzz\r\n")
        let (deafBytes, deafClosed) = deaf.readAll(timeout: 5)
        let deafText = String(decoding: deafBytes, as: UTF8.self)
        #expect(deafText.hasPrefix("HTTP/1.1 400 "), "\(deafText)")
        #expect(deafText.hasSuffix("{\"error\":\"bad_request\"}"), "\(deafText)")
        #expect(ContinuousClock.now - started < .milliseconds(2800), "before the handler's own answer")
        #expect(deafClosed)
        // HTTP/2: a body of unknown length goes over the limit while the handler reads it.
        let upload = ProcessRunner.temporaryDirectory("midbody") + "/body"
        try Data(repeating: 0x61, count: 4096).write(to: URL(fileURLWithPath: upload))
        let h2 = try ProcessRunner.run(
            "sh",
            [
                "-c",
                "curl -sS --http2-prior-knowledge -w ' %{http_code}' -T - "
                    + "http://127.0.0.1:\(port)/echo <\(upload)"
            ])
        #expect(h2.stdout == "echo failed 413 413", "\(h2.stdout) \(h2.stderr)")
        // A handler that answered before reading the body keeps its answer; the connection then closes.
        let client = try RawClient(port: port)
        client.send("POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")
        let first = client.read(until: { $0.contains("hello") }, timeout: 5)
        #expect(first.hasPrefix("HTTP/1.1 200 "))
        client.send("zz\r\n")
        let (rest, closed) = client.readAll()
        #expect(rest.isEmpty, "nothing after the answer: \(String(decoding: rest, as: UTF8.self))")
        #expect(closed)
    }

    @Test func anUnreadBodyAfterAnEarlyAnswerIsDroppedAndTheConnectionGoesOn() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        // /hello answers without reading the body: the rest of the body, sent after the answer, is read and dropped
        // (far more than the body stream buffers), and the next request on the connection is served.
        let size = 4 << 20
        for framing in ["Content-Length: \(size)", "Transfer-Encoding: chunked"] {
            let client = try RawClient(port: port)
            client.send("POST /hello HTTP/1.1\r\nHost: x\r\n\(framing)\r\n\r\n")
            let first = client.read(until: { $0.contains("hello") }, timeout: 5)
            #expect(first.hasPrefix("HTTP/1.1 200 "), "\(framing): \(first)")
            let chunk = [UInt8](repeating: UInt8(ascii: "b"), count: 64 * 1024)
            for _ in 0..<(size / chunk.count) {
                if framing.hasPrefix("Transfer") {
                    client.send(Array("10000\r\n".utf8) + chunk + Array("\r\n".utf8))
                } else {
                    client.send(chunk)
                }
            }
            if framing.hasPrefix("Transfer") { client.send("0\r\n\r\n") }
            client.send("GET /target?next HTTP/1.1\r\nHost: x\r\n\r\n")
            let next = client.read(until: { $0.contains("/target?next") }, timeout: 5)
            #expect(next.hasPrefix("HTTP/1.1 200 "), "\(framing): the next request is served: \(next)")
        }
    }

    @Test func anEarlyAnswerToAPipelinedExpectContinueClosesInsteadOfDroppingABodyThatMayNeverCome() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        // The second request is pipelined, so it gets no 100 Continue and its client may never send the body: the
        // bytes after it could be the next request, which must not be swallowed as body ("0.CL" desync).
        let client = try RawClient(port: port)
        client.send(
            "GET /slow?ms=50 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /hello HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 20\r\n\r\n")
        let answers = client.read(until: { $0.contains("hello") }, timeout: 5)
        #expect(!answers.contains("100 Continue"))
        #expect(answers.components(separatedBy: "HTTP/1.1 200").count == 3, "both answered: \(answers)")
        #expect(answers.lowercased().contains("connection: close"), "the early answer closes: \(answers)")
        client.send("GET /target?smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
        let (rest, closed) = client.readAll()
        #expect(rest.isEmpty, "nothing after the early answer: \(String(decoding: rest, as: UTF8.self))")
        #expect(closed)
    }

    @Test func http10ClosesUnlessKeepAliveAsked() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let plain = try RawClient(port: port)
        plain.send("GET /hello HTTP/1.0\r\n\r\n")
        let (bytes, closed) = plain.readAll()
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.0 200 OK"))
        #expect(closed)
        let keep = try RawClient(port: port)
        keep.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(keep.read(until: { $0.hasSuffix("hello") }).contains("Connection: keep-alive"))
        keep.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(keep.read(until: { $0.hasSuffix("hello") }).hasPrefix("HTTP/1.0 200 OK"))
    }

    @Test func streamedBodiesAreChunked() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.read(until: { $0.hasSuffix("0\r\n\r\n") })
        #expect(reply.contains("Transfer-Encoding: chunked"))
        #expect(reply.hasSuffix("4\r\none,\r\n4\r\ntwo,\r\n5\r\nthree\r\n0\r\n\r\n"))
        let curl = try ProcessRunner.run("curl", ["-s", "http://127.0.0.1:\(port)/stream"])
        #expect(curl.stdout == "one,two,three")
    }

    @Test func slowHeadersGet408AndIdleConnectionsClose() async throws {
        var limits = HTTPServerLimits()
        limits.headerTimeout = .milliseconds(500)
        limits.idleTimeout = .milliseconds(500)
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let slow = try RawClient(port: port)
        slow.send("GET /hello HTTP/1.1\r\nHo")
        let (bytes, closed) = slow.readAll(timeout: 3)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408 "))
        #expect(closed)
        let idle = try RawClient(port: port)
        let (idleBytes, idleClosed) = idle.readAll(timeout: 3)
        #expect(idleBytes.isEmpty)
        #expect(idleClosed)
    }

    /// A body that stops arriving gets 408 at the body timeout even though its handler is already running (it is
    /// cancelled, and sees the body fail with `timedOut`).
    @Test func aStalledBodyGets408WhileItsHandlerRuns() async throws {
        var limits = HTTPServerLimits()
        limits.bodyTimeout = .milliseconds(500)
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let slow = try RawClient(port: port)
        slow.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        let (bytes, closed) = slow.readAll(timeout: 3)
        #expect(
            String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408 "),
            "\(String(decoding: bytes, as: UTF8.self))")
        #expect(String(decoding: bytes, as: UTF8.self).hasSuffix("echo failed 408"))
        #expect(closed)
    }

    @Test func gracefulShutdownFinishesInFlightRequests() async throws {
        let (server, port) = try await startTestServer()
        let client = try RawClient(port: port)
        client.send("GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n")
        try await Task.sleep(for: .milliseconds(50))
        let shutdown = Task { await server.shutdown(timeout: .seconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(throws: (any Error).self) { _ = try RawClient(port: port) }
        let (bytes, closed) = client.readAll(timeout: 3)
        let reply = String(decoding: bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK"))
        #expect(reply.contains("Connection: close"))
        #expect(reply.hasSuffix("slow 300"))
        #expect(closed)
        await shutdown.value
    }

    /// A request without body framing has no body (and costs no stream) until a handler reads it; an empty body that
    /// was framed is still a body.
    @Test func requestsTellWhetherTheyCameWithABody() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /body-state HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: { $0.contains("bytes=") }).hasSuffix("hasBody=false finished=true bytes=0"))
        client.send("POST /body-state HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(client.read(until: { $0.contains("bytes=") }).hasSuffix("hasBody=true finished=true bytes=0"))
        client.send("POST /body-state HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab")
        try await Task.sleep(for: .milliseconds(50))
        client.send("cde")
        #expect(client.read(until: { $0.contains("bytes=") }).hasSuffix("hasBody=true finished=false bytes=5"))
    }
}
