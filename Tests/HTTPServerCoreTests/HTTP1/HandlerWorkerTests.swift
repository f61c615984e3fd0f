import Foundation
import TestSupport
import Testing

@testable import HTTPServerCore

#if canImport(Glibc)
import Glibc
#endif

/// A keep-alive connection's handlers run in one long-lived task, one request after another; a request that arrives
/// while that task is busy gets a task of its own and the answers keep their order.
@Suite(.serialized) struct HandlerWorkerTests {
    private func taskIDs(in reply: String) -> [String] {
        reply.components(separatedBy: "task ").dropFirst().map { String($0.prefix { $0.isNumber || $0 == "-" }) }
    }

    @Test func consecutiveRequestsOnAConnectionShareOneTask() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        var ids: [String] = []
        for _ in 1...3 {
            client.send("GET /task-id HTTP/1.1\r\nHost: x\r\n\r\n")
            ids += taskIDs(in: client.read(until: { self.taskIDs(in: $0).count == 1 }))
        }
        #expect(ids.count == 3 && Set(ids).count == 1, "\(ids)")
    }

    @Test func aRequestPipelinedBehindABusyHandlerGetsItsOwnTaskAndWaitsItsTurn() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let client = try RawClient(port: port)
        client.send("GET /task-id?ms=200 HTTP/1.1\r\nHost: x\r\n\r\nGET /task-id HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = client.read(until: { self.taskIDs(in: $0).count == 2 })
        let ids = taskIDs(in: reply)
        #expect(ids.count == 2 && ids[0] != ids[1], "both handlers ran at once, in different tasks: \(ids)")
        // The worker is free again: the next request goes to it, not to the pipelined request's task.
        client.send("GET /task-id HTTP/1.1\r\nHost: x\r\n\r\n")
        let next = taskIDs(in: client.read(until: { self.taskIDs(in: $0).count == 1 }))
        #expect(next.count == 1 && next.first == ids.first, "\(ids) then \(next)")
    }

    @Test func aResetConnectionCancelsTheHandlerItsWorkerRuns() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        var client: RawClient? = try RawClient(port: port)
        client?.send("GET /task-id HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = client?.read(until: { $0.contains("task ") })
        let id = "worker-\(UUID().uuidString)"
        client?.send("GET /cancel-probe?id=\(id) HTTP/1.1\r\nHost: x\r\n\r\n")
        try await Task.sleep(for: .milliseconds(200))
        if let fd = client?.fd {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        client = nil  // closed with a reset
        var state = "started"
        for _ in 0..<40 where state != "cancelled" {
            try await Task.sleep(for: .milliseconds(50))
            state = await CancelProbe.shared.state(id)
        }
        #expect(state == "cancelled")
    }

    /// A loop keeps at most `maxHandlerWorkers` workers; connections beyond them are served by a task per request.
    @Test func connectionsBeyondTheWorkerBudgetAreServedAsWell() async throws {
        let (server, port) = try await startTestServer()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let clients = try (0..<(HTTPServerLoopContext.maxHandlerWorkers + 20)).map { _ in try RawClient(port: port) }
        for round in 1...2 {
            for client in clients { client.send("GET /task-id?ms=20 HTTP/1.1\r\nHost: x\r\n\r\n") }
            var answered = 0
            for client in clients where client.read(until: { $0.contains("task ") }, timeout: 5).contains("task ") {
                answered += 1
            }
            #expect(answered == clients.count, "round \(round)")
        }
    }
}
