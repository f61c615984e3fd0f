import Foundation
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// Switching protocols (`Upgrade`, 101) on an HTTP/1.1 connection: after the handler's 101 the connection relays
/// bytes as they are both ways; any other answer leaves it speaking HTTP/1.
@Suite(.serialized) struct UpgradeTests {
    static let upgradeHead =
        "GET /upgrade-echo HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: echo-test\r\n\r\n"

    @Test func aSwitchedConnectionRelaysBytesBothWaysUntilTheClientCloses() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        // Bytes sent right behind the request, before the 101, are the new protocol's too.
        client.send(Self.upgradeHead + "early,")
        let head = client.read(until: { $0.contains("early,") })
        #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), "\(head)")
        #expect(head.contains("\r\nUpgrade: echo-test\r\n") && head.contains("\r\nConnection: Upgrade\r\n"))
        #expect(!head.contains("Content-Length") && !head.contains("Transfer-Encoding"), "a tunnel is not framed")
        #expect(head.hasSuffix("\r\n\r\nearly,"))
        client.send("GET /hello HTTP/1.1\r\n\r\n")
        let echoed = client.read(until: { $0.hasSuffix("GET /hello HTTP/1.1\r\n\r\n") })
        #expect(!echoed.contains("hello\r\n") && !echoed.contains("200 OK"), "nothing after the 101 is parsed as HTTP")
        client.shutdownWrite()
        let (_, closed) = client.readAll(timeout: 3)
        #expect(closed, "the handler's stream ends when the client closes, and the connection with it")
    }

    @Test func aTunnelCarriesMegabytesWithBackPressure() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(Self.upgradeHead)
        _ = client.read(until: { $0.hasSuffix("\r\n\r\n") })
        let size = 8 << 20
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        // Sent from another thread while this one reads: neither side may wait for the other to finish.
        let sender = Thread {
            client.send(payload)
            client.shutdownWrite()
        }
        sender.start()
        let (bytes, closed) = client.readAll(timeout: 10)
        #expect(bytes.count == size)
        #expect(bytes == payload)
        #expect(closed)
    }

    @Test func aRefusedUpgradeLeavesTheConnectionSpeakingHTTP1() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send(
            "GET /upgrade-refuse HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo-test\r\n\r\n"
                + "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.read(until: { $0.hasSuffix("hello") })
        #expect(reply.hasPrefix("HTTP/1.1 426 "))
        #expect(reply.contains("upgrade refused, input=true"))
        #expect(reply.contains("HTTP/1.1 200 OK"), "the request behind the refused upgrade is served: \(reply)")
    }

    @Test func a101ToARequestThatDidNotAskIsA500() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /bad-101 HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, closed) = client.readAll(timeout: 3)
        let reply = String(decoding: bytes, as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 500 "), "\(reply)")
        #expect(closed)
    }

    @Test func anHTTP10RequestCannotUpgrade() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /upgrade-echo HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: echo-test\r\n\r\n")
        let (bytes, _) = client.readAll(timeout: 3)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.0 400 "))
    }
}
