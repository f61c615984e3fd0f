import Foundation
import TestSupport
import Testing

@testable import HTTPServerCore

/// What a client's EOF does to the requests it left in flight: by default they are answered (a half-close after
/// sending is legal HTTP/1.1); with `abandonsRequestsOnClientEOF` their handlers are cancelled and the connection closed.
@Suite(.serialized) struct ClientEOFTests {
    @Test func aHalfClosingClientIsAnsweredByDefault() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /task-id?ms=200 HTTP/1.1\r\nHost: x\r\n\r\n")
        client.shutdownWrite()
        let reply = client.readAll(timeout: 3)
        let text = String(decoding: reply.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.contains("task "))
        #expect(reply.closed)
    }

    @Test func aClientEOFCancelsTheHandlersWhenRequestsAreAbandoned() async throws {
        var limits = HTTPServerLimits()
        limits.abandonsRequestsOnClientEOF = true
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        let id = "eof-\(UUID().uuidString)"
        client.send("GET /cancel-probe?id=\(id) HTTP/1.1\r\nHost: x\r\n\r\n")
        try await Task.sleep(for: .milliseconds(200))
        client.shutdownWrite()
        let reply = client.readAll(timeout: 3)
        #expect(
            reply.bytes.isEmpty && reply.closed, "closed unanswered: \(String(decoding: reply.bytes, as: UTF8.self))")
        var state = "started"
        for _ in 0..<40 where state != "cancelled" {
            try await Task.sleep(for: .milliseconds(50))
            state = await CancelProbe.shared.state(id)
        }
        #expect(state == "cancelled")
    }

    @Test func aResponseAlreadyBeingStreamedIsFinishedAfterTheEOF() async throws {
        var limits = HTTPServerLimits()
        limits.abandonsRequestsOnClientEOF = true
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        var text = client.read(until: { $0.contains("one,") })
        client.shutdownWrite()
        text += String(decoding: client.readAll(timeout: 3).bytes, as: UTF8.self)
        #expect(text.contains("three"), "\(text)")
    }
}
