import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback port nobody listens on right now, for a server a test starts next (often another process, told the
/// port in its configuration).
///
/// The port is taken below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), walking from a random start
/// and checked by binding it. A port from the ephemeral range (what binding port 0 gives) can be handed to any
/// outgoing connection in the moment between the check and the server's bind, and the suites open thousands of
/// connections; below the range only an explicit bind can take it. Successive calls in one process never return
/// the same port until the walk wraps.
package func freeLoopbackPort() throws -> Int {
    let range = portsBelowEphemeralRange()
    for _ in 0..<512 {
        let port = nextCandidate(in: range)
        if try loopbackPortIsFree(port) { return port }
    }
    throw POSIXError(.EADDRINUSE)
}

/// The next port of the process-wide walk over `range`, which starts at a random port.
private func nextCandidate(in range: Range<Int>) -> Int {
    candidateCursor.withLock { cursor in
        let offset = cursor ?? Int.random(in: 0..<range.count)
        cursor = (offset + 1) % range.count
        return range.lowerBound + offset
    }
}

private let candidateCursor = Mutex<Int?>(nil)

/// `20000..<low`, where `low` is the start of the ephemeral range (32768 by default); the whole unprivileged range
/// below it if the machine's range starts lower.
private func portsBelowEphemeralRange() -> Range<Int> {
    let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
    let low = text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
    return low > 21000 ? 20000..<low : 1024..<max(low, 2048)
}

/// Whether `127.0.0.1:port` can be bound now (no `SO_REUSEADDR`: a port with a connection in TIME_WAIT counts as
/// taken too).
private func loopbackPortIsFree(_ port: Int) throws -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return bound == 0
}
