import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket listening on an IPv4 `host` at a port the kernel chose, for test listeners that handle their
/// connections themselves.
enum ListeningSocket {
    /// The socket and its port; throws (closing it) when it cannot be bound or listen.
    static func open(host: String, backlog: Int32, nonBlocking: Bool = false) throws -> (fd: Int32, port: Int) {
        let flags = Int32(SOCK_STREAM.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let fd = socket(AF_INET, flags, 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, host, &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
