import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// Handlers that answer in `respondImmediately` (no task): same framing, order and protocols as `handle`.
@Suite(.serialized) struct ImmediateResponseTests {
    @Test func immediateAnswersWaitTheirTurnBehindSlowerOnes() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(
            "GET /slow?ms=150 HTTP/1.1\r\nHost: x\r\n\r\nGET /now?n=2 HTTP/1.1\r\nHost: x\r\n\r\nGET /now?n=3 HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        let reply = client.read(until: { $0.contains("/now?n=3") })
        let slow = try #require(reply.range(of: "slow 150"))
        let second = try #require(reply.range(of: "/now?n=2"))
        let third = try #require(reply.range(of: "/now?n=3"))
        #expect(slow.lowerBound < second.lowerBound && second.lowerBound < third.lowerBound)
        #expect(reply.components(separatedBy: "X-Answered: now").count == 3)
    }

    @Test func manyPipelinedImmediateRequestsAreAllAnsweredInOrder() async throws {
        // Far more than the pipelining limit in one write: reading pauses and resumes, and every answer is written.
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        let count = 500
        client.send((0..<count).map { "GET /now?n=\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        let reply = client.read(until: { $0.hasSuffix("/now?n=\(count - 1)") }, timeout: 5)
        let bodies = reply.components(separatedBy: "HTTP/1.1 200 OK\r\n").dropFirst()
            .map { $0.components(separatedBy: "\r\n\r\n").last ?? "" }
        #expect(bodies == (0..<count).map { "/now?n=\($0)" })
        client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.read(until: { $0.hasSuffix("hello") }).contains("HTTP/1.1 200"), "the connection goes on")
    }

    @Test func headAndCloseAreFramedAsForHandle() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(
            "HEAD /now HTTP/1.1\r\nHost: x\r\n\r\nGET /now?last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (bytes, closed) = client.readAll()
        let reply = String(decoding: bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(reply.contains("Content-Length: 4\r\n"), "HEAD declares the body it does not send")
        #expect(!reply.contains("\r\n\r\n/now\r\n") && reply.hasSuffix("\r\n\r\n/now?last"))
        #expect(closed)
    }

    @Test func http2StreamsAreAnsweredWithoutATask() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let get = try ProcessRunner.run(
            "curl", ["-s", "-i", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/now?h2"])
        #expect(get.stdout.hasPrefix("HTTP/2 200"))
        #expect(get.stdout.contains("x-answered: now"))
        #expect(get.stdout.hasSuffix("/now?h2"))
        let load = try ProcessRunner.run(
            "h2load", ["-n", "2000", "-c", "4", "-m", "16", "http://127.0.0.1:\(port)/now"])
        #expect(load.stdout.contains("2000 succeeded"), "\(load.stdout)")
    }
}
