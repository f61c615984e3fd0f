import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A port nothing should ever reach: a listener on another loopback address (127.0.0.2 by default) that never
/// answers. The kernel completes every connection attempt into its accept queue, so ``connections()`` counts each one
/// that was made, even one its caller closed at once, by accepting them all when asked.
package final class TrapListener: @unchecked Sendable {
    package let host: String
    package let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var accepted = 0

    package init(host: String = "127.0.0.2") throws {
        let (listener, port) = try ListeningSocket.open(host: host, backlog: 512, nonBlocking: true)
        self.host = host
        self.port = port
        self.listener = listener
    }

    /// `host:port`, as a URL authority.
    package var authority: String { "\(host):\(port)" }

    /// How many connections reached the trap so far (each is accepted and closed on the way).
    package func connections() -> Int {
        lock.lock()
        defer { lock.unlock() }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { break }
            close(connection)
            accepted += 1
        }
        return accepted
    }

    deinit { close(listener) }
}
