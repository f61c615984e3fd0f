import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback port where connecting hangs: a listener that never accepts, its accept queue already full, so the kernel
/// drops further SYNs and a `connect` to it neither succeeds nor is refused until the caller gives up. It stands in for
/// an address whose host is down (no RST comes back), without sending anything off the machine.
package final class UnansweredListener: Sendable {
    package let port: Int
    private let listener: Int32
    private let fillers: [Int32]

    package init() throws {
        // Backlog 0: the accept queue is full with one established connection.
        let (listener, port) = try ListeningSocket.open(host: "127.0.0.1", backlog: 0)
        // Non-blocking connects until one stays pending: from then on the queue is full.
        var fillers: [Int32] = []
        var full = false
        for _ in 0..<8 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard filler >= 0 else { break }
            fillers.append(filler)
            var target = Self.loopback(port: port)
            _ = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            var poller = pollfd(fd: filler, events: Int16(POLLOUT), revents: 0)
            if poll(&poller, 1, 100) == 0 {
                full = true
                break
            }
        }
        guard full else {
            fillers.forEach { close($0) }
            close(listener)
            throw POSIXError(.EAGAIN)
        }
        self.listener = listener
        self.port = port
        self.fillers = fillers
    }

    deinit {
        fillers.forEach { close($0) }
        close(listener)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        return address
    }
}
