import Foundation
import HTTPClientCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SLOW-01 and SLOW-05 through the real binary: a slowloris that drips its head a byte at a time is cut by the total
/// header timeout (a drip does not reset it), with 408, while other callers are served all along; descriptors come
/// back to where they were.
@Suite(.serialized) struct GatewaySlowClientTests {
    @Test func drippedHeadsAreCutAtTheTotalHeaderTimeoutWhileOthersAreServed() async throws {
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  limits: { header_timeout: 1s }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  canned: { stub: { status: 200, body: "ok" } }
                routes:
                  - { name: hello, match: { path: /hello }, upstream: canned }
                """)
        func descriptors() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(gateway.process.processIdentifier)/fd").count)
                ?? -1
        }
        let baseline = descriptors()
        let dripCount = 40
        var drips = try (0..<dripCount).map { _ in try RawClient(port: gateway.port) }
        for drip in drips { drip.send("GET /hello HTTP/1.1\r\n") }
        // Normal callers meanwhile, on a connection of their own.
        let client = HTTPClient()
        let url = "\(gateway.url)/hello"
        let served = Task {
            var statuses: [Int] = []
            for _ in 0..<100 {
                statuses.append((try? await client.execute(HTTPClientRequest(url: url)))?.status ?? -1)
                try? await Task.sleep(for: .milliseconds(10))
            }
            return statuses
        }
        // One more header byte to each every 100 ms for 2.5 s: well past the 1 s timeout, never idle for 100 ms.
        let header = Array("X-Drip: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8)
        for round in 0..<25 {
            for drip in drips {
                // Once answered, no more bytes (they would make the closed socket reset the connection).
                var pending = pollfd(fd: drip.fd, events: Int16(POLLIN), revents: 0)
                if poll(&pending, 1, 0) == 0 { drip.send([header[round % header.count]]) }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        var answered = 0
        for drip in drips {
            let (bytes, closed) = drip.readAll(timeout: 1)
            let text = String(decoding: bytes, as: UTF8.self)
            if text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n") && closed { answered += 1 }
        }
        #expect(answered == dripCount, "\(answered) of \(dripCount) dripping heads got 408 and a close")
        // Closed here: until then the gateway lingers on them (nginx's lingering close).
        drips.removeAll()
        let statuses = await served.value
        #expect(statuses == Array(repeating: 200, count: 100), "\(statuses.filter { $0 != 200 })")
        client.shutdown()
        var now = descriptors()
        // The gateway closes them once their lingering close ends; on a loaded machine that can take a few seconds.
        for _ in 0..<60 where now > baseline {
            try await Task.sleep(for: .milliseconds(100))
            now = descriptors()
        }
        #expect(now <= baseline, "descriptors \(baseline) before, \(now) after")
        #expect(gateway.stop() == 0)
        // One line per refused connection (the timeout once refused a connection again at every sweep until it closed).
        #expect(gateway.accessLog.filter { $0["status"] as? Int == 408 }.count == dripCount)
    }
}
