import Foundation
import HTTPServerCore
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Writing to a peer that went away is an error for that connection, never a SIGPIPE for the process: the engine
/// sends with MSG_NOSIGNAL, so a library user who did not ignore SIGPIPE is safe.
@Suite(.serialized) struct BrokenPipeTests {
    @Test func aVanishedPeerDoesNotKillAProcessThatKeepsTheDefaultSIGPIPEAction() async throws {
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        let (server, port) = try await startTestServer()
        let body = String(repeating: "x", count: 512 * 1024)
        for _ in 0..<20 {
            let client = try RawClient(port: port)
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            // Half-close (the server sees FIN and keeps answering), read a little, then reset with unread data: the
            // server's next write meets EPIPE.
            client.shutdownWrite()
            _ = client.read(until: { $0.contains("\r\n\r\n") }, timeout: 2)
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        try await Task.sleep(for: .milliseconds(300))
        let check = try RawClient(port: port)
        check.send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(String(decoding: check.readAll().bytes, as: UTF8.self).hasSuffix("hello"), "still alive and serving")
        await server.shutdown(timeout: .seconds(1))
    }
}
