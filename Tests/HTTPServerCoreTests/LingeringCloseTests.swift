import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A connection the server closes while its client may still be sending (a refused upload, a body that failed part-way)
/// closes lingering: the answer arrives whole and ends with a FIN, what the client still sends is read and dropped
/// instead of being answered with a reset, and the lingering ends once the client goes quiet.
@Suite(.serialized) struct LingeringCloseTests {
    private static func limits() -> HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 1000
        limits.lingeringClose = LingeringClose(idle: .milliseconds(400), limit: .seconds(10))
        return limits
    }

    /// A client whose sends give up after a few seconds instead of blocking forever on a server that stopped reading.
    private static func client(port: Int) throws -> RawClient {
        let client = try RawClient(port: port)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return client
    }

    /// Sends `count` bytes in 64 KiB pieces; the errno of the first send that failed, or 0.
    private static func upload(_ count: Int, on client: RawClient) -> Int32 {
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 64 * 1024)
        var sent = 0
        while sent < count {
            let result = piece.withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if result < 0 { return errno }
            sent += result
        }
        return 0
    }

    @Test func anUploadRefusedAtItsHeadGetsItsWholeAnswerAndIsNotResetWhileItGoesOnSending() async throws {
        let (server, port) = try await startTestServer(limits: Self.limits())
        let client = try Self.client(port: port)
        // Refused at the head (the declared length is over the limit); the client, as curl does without
        // `Expect: 100-continue`, sends its body all the same.
        client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 8000000\r\n\r\n")
        let failure = Self.upload(4 * 1024 * 1024, on: client)
        #expect(failure == 0, "the rest of the upload is read and dropped, not reset (errno \(failure))")
        let (bytes, closed) = client.readAll(timeout: 3)
        let reply = String(decoding: bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 413"), "\(reply)")
        #expect(reply.contains("Connection: close"), "\(reply)")
        #expect(closed, "the answer ends with the server's FIN")

        // Once the client goes quiet past the lingering's idle time, the connection is closed for good: what the
        // client sends then is refused.
        try await Task.sleep(for: .milliseconds(1200))
        var late: Int32 = 0
        for _ in 0..<20 where late == 0 {
            late = Self.upload(64 * 1024, on: client)
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(late == EPIPE || late == ECONNRESET, "errno \(late)")
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func aChunkedBodyOverTheLimitPartWayGetsItsAnswerWhileTheClientGoesOnSending() async throws {
        let (server, port) = try await startTestServer(limits: Self.limits())
        let client = try Self.client(port: port)
        let chunk = String(repeating: "z", count: 4000)
        client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nfa0\r\n\(chunk)\r\n")
        let failure = Self.upload(8 * 1024 * 1024, on: client)
        #expect(failure == 0, "errno \(failure)")
        let (bytes, closed) = client.readAll(timeout: 3)
        let reply = String(decoding: bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 413"), "\(reply)")
        #expect(closed)
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func lingeringEndsOnceItHasDroppedItsByteBound() async throws {
        var limits = Self.limits()
        limits.lingeringClose = LingeringClose(idle: .seconds(30), limit: .seconds(60), maxBytes: 1 << 20)
        let (server, port) = try await startTestServer(limits: limits)
        let client = try Self.client(port: port)
        client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 8000000\r\n\r\n")
        let (bytes, closed) = client.readAll(timeout: 3)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 413") && closed)
        let failure = Self.upload(32 << 20, on: client)
        #expect(
            failure == EPIPE || failure == ECONNRESET, "past 1 MiB dropped the connection is closed: errno \(failure)")
        await server.shutdown(timeout: .seconds(1))
    }

    @Test func aClientThatClosesEndsTheLingeringAtOnce() async throws {
        var limits = Self.limits()
        limits.lingeringClose = LingeringClose(idle: .seconds(30), limit: .seconds(60))
        let (server, port) = try await startTestServer(limits: limits)
        var clients: [RawClient] = []
        for _ in 0..<20 {
            let client = try Self.client(port: port)
            client.send(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "x", count: 5000))
            #expect(String(decoding: client.readAll(timeout: 3).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 413"))
            clients.append(client)
        }
        #expect(server.openConnections == 20, "lingering: each waits for its client")
        clients.removeAll()
        let deadline = ContinuousClock.now + .seconds(3)
        while server.openConnections > 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(
            server.openConnections == 0, "a client's close ends its connection's lingering, long before the idle time")
        let check = try RawClient(port: port)
        check.send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(String(decoding: check.readAll().bytes, as: UTF8.self).hasSuffix("hello"), "still serving")
        await server.shutdown(timeout: .seconds(1))
    }
}
