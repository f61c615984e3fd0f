import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Probes a server's cap on open connections over raw sockets: `cap` connections each get one keep-alive request
/// answered and are held; one more connection sends the same request; then the first held one closes and new
/// connections (with `Connection: close`) are tried for up to 2.5 s. Blocking: run it off the cooperative pool.
package struct ConnectionCapProbe: Sendable {
    /// How many of the held connections were answered 200.
    package var held: Int
    /// Whether the connection past the cap was closed, and how many bytes it got before that.
    package var overClosed: Bool
    package var overBytes: Int
    /// Whether a new connection was served once one of the held ones closed.
    package var servedAfter: Bool

    /// Runs the probe against `port`, whose cap is `cap`.
    /// - Parameters:
    ///   - target: the request target (`/hello`); an answer is complete when it ends with `bodyEnd`.
    package static func run(port: Int, cap: Int, target: String, bodyEnd: String) throws -> ConnectionCapProbe {
        var clients = try (0..<cap).map { _ in try RawClient(port: port) }
        var held = 0
        for client in clients {
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            if client.read(until: { $0.hasSuffix(bodyEnd) }, timeout: 5).hasPrefix("HTTP/1.1 200") { held += 1 }
        }
        let over = try RawClient(port: port)
        over.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        let (bytes, closed) = over.readAll(timeout: 3)
        clients.removeFirst()
        var servedAfter = false
        for _ in 0..<50 where !servedAfter {
            usleep(50_000)
            let next = try RawClient(port: port)
            next.send("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            servedAfter = String(decoding: next.readAll(timeout: 2).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200")
        }
        withExtendedLifetime(clients) {}
        return ConnectionCapProbe(held: held, overClosed: closed, overBytes: bytes.count, servedAfter: servedAfter)
    }
}
