import CNetShims

#if canImport(Glibc)
import Glibc
#endif

/// Thin wrappers over the socket system calls the loops use. Every socket is non-blocking and close-on-exec.
package enum Socket {
    /// Opens a listening socket on `address` with `SO_REUSEADDR` and `SO_REUSEPORT`, so each loop can have its own.
    ///
    /// `SO_REUSEPORT` alone would let any process of the same user bind a port already listened on and silently take
    /// part of its connections. So unless `joiningOwnListener` (a further loop of one server joining the port its
    /// first loop bound), the port is first checked with a plain bind: `EADDRINUSE` when anyone listens there.
    package static func listen(on address: SocketAddress, backlog: Int32 = 1024, joiningOwnListener: Bool = false)
        throws -> Int32
    {
        if !joiningOwnListener && address.port != 0 { try checkNotListened(address) }
        let domain = address.family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(
            domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.last("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.family == .ipv6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = address.withSockAddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let error = SystemError.last("bind \(address)")
            close(fd)
            throw error
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let error = SystemError.last("listen \(address)")
            close(fd)
            throw error
        }
        return fd
    }

    /// Binds a probe socket without `SO_REUSEPORT` to `address` and closes it: fails with `EADDRINUSE` when a
    /// listener (with or without `SO_REUSEPORT`) already holds the address.
    private static func checkNotListened(_ address: SocketAddress) throws {
        let domain = address.family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.last("socket") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.family == .ipv6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        guard address.withSockAddr({ bind(fd, $0, $1) }) == 0 else {
            throw SystemError.last("bind \(address) (another process or server listens there)")
        }
    }

    /// The port a socket is bound to (useful after binding port 0).
    package static func localAddress(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? SocketAddress(storage: storage) : nil
    }

    /// Starts a non-blocking connect; returns the socket and whether it already completed.
    package static func startConnect(to address: SocketAddress) throws -> (fd: Int32, connected: Bool) {
        let domain = address.family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(
            domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError.last("socket") }
        setNoDelay(fd)
        let rc = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 { return (fd, true) }
        if errno == EINPROGRESS { return (fd, false) }
        let error = SystemError.last("connect \(address)")
        close(fd)
        throw error
    }

    /// The pending error of a socket (`SO_ERROR`), 0 when none.
    package static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
        return value
    }

    /// Turns off Nagle's algorithm, so a response's last segment is not held for a delayed ACK.
    package static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Ignores SIGPIPE process-wide, so a write to a closed peer is an `EPIPE` error, not a crash.
    package static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}
