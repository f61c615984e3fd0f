import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

/// Resource behaviour: the connection cap, descriptor exhaustion (`EMFILE`) and exclusive ports.
@Suite(.serialized) struct ConnectionLimitTests {
    @Test func connectionOverTheLimitIsClosedAndServingResumesWhenOneCloses() async throws {
        var limits = HTTPServerLimits()
        limits.maxConnections = 3
        let (server, port) = try await startTestServer(limits: limits)
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let outcome = try await offPool {
            try ConnectionCapProbe.run(port: port, cap: 3, target: "/hello", bodyEnd: "hello")
        }
        #expect(outcome.held == 3)
        #expect(outcome.overClosed && outcome.overBytes == 0, "connection 4 is closed without a response")
        #expect(outcome.servedAfter, "after one of the three closes, a new connection is served")
    }

    @Test func descriptorExhaustionDoesNotBusyLoopAndServingResumes() async throws {
        let port = try freeLoopbackPort()
        let hello = try HelloServerProcess(port: port, fileLimit: 64)
        defer { hello.stop() }
        #expect(try await hello.waitUntilServing(), "hello-server did not start: \(hello.output)")
        let pid = hello.pid
        let outcome = try await offPool { () -> (served: Int, cpu: Double, backlogServed: Bool, servedAgain: Bool) in
            // 100 connections against 64 descriptors: the first ones are served, the rest wait in the backlog while
            // accept fails with EMFILE.
            var clients = try (0..<100).map { _ in try RawClient(port: port) }
            for client in clients { client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n") }
            usleep(500_000)
            let answered = clients.map {
                $0.read(until: { $0.contains("Hello, World!") }, timeout: 0.02).hasPrefix("HTTP/1.1 200")
            }
            let before = try HelloServerProcess.cpuSeconds(pid: pid)
            usleep(2_000_000)
            let cpu = try HelloServerProcess.cpuSeconds(pid: pid) - before
            // Closing the served connections frees descriptors: a waiting one gets its answer, new ones are served.
            let waiting = zip(clients, answered).filter { !$0.1 }.map(\.0)
            clients.removeAll()
            let backlogServed =
                waiting.first?.read(until: { $0.contains("Hello, World!") }, timeout: 3).hasPrefix("HTTP/1.1 200")
                ?? false
            var servedAgain = false
            for _ in 0..<30 where !servedAgain {
                servedAgain = HelloServerProcess.get(port: port, timeout: 1)
                if !servedAgain { usleep(100_000) }
            }
            return (answered.filter { $0 }.count, cpu, backlogServed, servedAgain)
        }
        #expect(outcome.served > 0 && outcome.served < 100, "saturated: \(outcome.served) of 100 served")
        #expect(outcome.cpu < 0.5, "CPU while saturated: \(outcome.cpu) s in 2 s (a busy accept loop uses about 2 s)")
        #expect(outcome.backlogServed, "a connection that waited in the backlog is served once descriptors free up")
        #expect(outcome.servedAgain, "new connections are served again")
        #expect(hello.process.isRunning)
    }
}

/// `SO_REUSEPORT` is for a server's own per-loop listeners only: binding a port someone already listens on fails.
@Suite(.serialized) struct ExclusivePortTests {
    @Test func secondServerOnTheSamePortFailsWithAddressInUse() async throws {
        let (first, port) = try await startTestServer(threads: 2)
        defer { Task { await first.shutdown(timeout: .seconds(1)) } }
        let group = try EventLoopGroup(threads: 2)
        let second = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: port)!]),
            group: group, handler: TestRoutes())
        do {
            try await second.start()
            Issue.record("the second server bound a port the first listens on")
        } catch let error as SystemError {
            #expect(error.errno == EADDRINUSE)
            #expect("\(error)".contains("Address already in use"))
        }
        await second.shutdown(timeout: .milliseconds(100))
        group.shutdown()
        // The first server still gets every connection.
        let answers = try await offPool { () -> Int in
            (0..<20).filter { _ in
                guard let client = try? RawClient(port: port) else { return false }
                client.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return String(decoding: client.readAll(timeout: 2).bytes, as: UTF8.self).hasSuffix("hello")
            }.count
        }
        #expect(answers == 20)
    }

    @Test func secondHelloServerOnTheSamePortExitsWithAClearMessage() async throws {
        let port = try freeLoopbackPort()
        let first = try HelloServerProcess(port: port)
        defer { first.stop() }
        #expect(try await first.waitUntilServing(), "hello-server did not start: \(first.output)")
        let second = try HelloServerProcess(port: port)
        defer { second.stop() }
        let status = try await second.waitForExit(seconds: 10)
        #expect(status != nil && status != 0, "the second hello-server must exit with an error")
        #expect(second.output.contains("Address already in use"), "\(second.output)")
        #expect(first.process.isRunning)
    }
}

/// IPv6 loopback listeners: served, and held exclusively like IPv4 ones.
@Suite(.serialized) struct IPv6ListenerTests {
    @Test func servesOnIPv6LoopbackAndRefusesASecondListener() async throws {
        let group = try EventLoopGroup(threads: 2)
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "::1", port: 0)!]),
            group: group, handler: TestRoutes())
        try await server.start()
        defer { Task { await server.shutdown(timeout: .seconds(1)) } }
        let port = server.localAddresses[0].port
        let answer = try await offPool { () -> String in
            let client = try RawClient(port: port, host: "::1")
            client.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return String(decoding: client.readAll(timeout: 2).bytes, as: UTF8.self)
        }
        #expect(answer.hasPrefix("HTTP/1.1 200") && answer.hasSuffix("hello"))
        let otherGroup = try EventLoopGroup(threads: 1)
        defer { otherGroup.shutdown() }
        let second = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "::1", port: port)!]),
            group: otherGroup, handler: TestRoutes())
        do {
            try await second.start()
            Issue.record("a second server bound [::1]:\(port)")
        } catch let error as SystemError {
            #expect(error.errno == EADDRINUSE)
        }
    }
}
