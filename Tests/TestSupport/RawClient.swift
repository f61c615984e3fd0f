import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client for tests: sends exact bytes and reads what comes back, with a timeout.
package final class RawClient: Sendable {
    package let fd: Int32

    /// Connects to `127.0.0.1:port` (or `host`).
    package init(port: Int, host: String = "127.0.0.1") throws {
        let isV6 = host.contains(":")
        fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var rc: Int32
        if isV6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET6, host, &address.sin6_addr)
            rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard rc == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    package func send(_ text: String) { send(Array(text.utf8)) }

    package func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Makes closing (at deinit) reset the connection (`SO_LINGER` 0): the peer sees the client gone at once,
    /// whatever it still had to send.
    package func resetOnClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    /// Half-closes the sending side.
    package func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads until the peer closes or `timeout` passes with no data; returns what arrived and whether it closed.
    package func readAll(timeout: Double = 2) -> (bytes: [UInt8], closed: Bool) {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollfd, 1, Int32(timeout * 1000))
            if ready <= 0 { return (result, false) }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (result, true) }
            result.append(contentsOf: buffer[0..<count])
        }
    }

    /// Reads until `predicate` holds for what arrived, the peer closes, or `timeout` passes.
    package func read(until predicate: (String) -> Bool, timeout: Double = 2) -> String {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollfd, 1, Int32(max(1, end.timeIntervalSinceNow * 1000)))
            if ready <= 0 { break }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            result.append(contentsOf: buffer[0..<count])
            if predicate(String(decoding: result, as: UTF8.self)) { break }
        }
        return String(decoding: result, as: UTF8.self)
    }
}

extension String {
    /// The number of non-overlapping occurrences of `needle`.
    package func occurrences(of needle: String) -> Int {
        components(separatedBy: needle).count - 1
    }
}

/// Whether this machine has an IPv6 loopback (`::1` can be bound): containers may run without one.
package func ipv6LoopbackIsAvailable() -> Bool {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    inet_pton(AF_INET6, "::1", &address.sin6_addr)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
    } == 0
}
