import CNetShims

#if canImport(Glibc)
import Glibc
#endif

/// A listening socket owned by one loop (`SO_REUSEPORT`, so every loop has its own and the kernel spreads accepts).
///
/// When the process runs out of descriptors (`EMFILE`/`ENFILE`) it stops accepting instead of spinning, and retries
/// after a short pause or as soon as ``resumeAccepting()`` is called (when a connection closes). Each such failure is
/// reported to `onAcceptFailure`, so that the owner can count it and say so (the connections waiting meanwhile stay in
/// the kernel's backlog, unanswered).
package final class Listener: EventLoopHandler {
    package let loop: EventLoop
    package let address: SocketAddress
    private var fd: Int32
    private let onAccept: (Int32, SocketAddress?) -> Void
    private let onAcceptFailure: ((Int32) -> Void)?
    private var paused = false
    private var retryTimer: LoopTimer?

    /// Binds `address`; `onAccept` runs on the loop with each accepted non-blocking socket. Fails with `EADDRINUSE`
    /// when anyone already listens there, unless `joiningOwnListener` (a further loop of the same server joining the
    /// port its first loop bound; see ``Socket/listen(on:backlog:joiningOwnListener:)``). `onAcceptFailure` runs on
    /// the loop with the `errno` of each accept that failed for want of resources (`EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`), before the pause.
    package init(
        address: SocketAddress, loop: EventLoop, backlog: Int32 = 1024, joiningOwnListener: Bool = false,
        onAcceptFailure: ((Int32) -> Void)? = nil,
        onAccept: @escaping (Int32, SocketAddress?) -> Void
    ) throws {
        self.fd = try Socket.listen(on: address, backlog: backlog, joiningOwnListener: joiningOwnListener)
        self.loop = loop
        self.onAccept = onAccept
        self.onAcceptFailure = onAcceptFailure
        self.address = Socket.localAddress(of: fd) ?? address
    }

    /// Registers with the loop; call on the loop thread.
    package func start() throws {
        try loop.registerListener(fd: fd, handler: self)
        acceptAll()
    }

    package func handleEvents(_ events: UInt32) {
        acceptAll()
    }

    /// Accepts again after a descriptor shortage.
    package func resumeAccepting() {
        guard paused, fd >= 0 else { return }
        paused = false
        retryTimer?.cancel()
        retryTimer = nil
        acceptAll()
    }

    private func acceptAll() {
        while !paused && fd >= 0 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(fd, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if client >= 0 {
                Socket.setNoDelay(client)
                onAccept(client, SocketAddress(storage: storage))
                continue
            }
            let code = errno
            switch code {
            case EAGAIN, EWOULDBLOCK:
                return
            case EINTR, ECONNABORTED, EPROTO:
                continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                paused = true
                onAcceptFailure?(code)
                retryTimer = loop.schedule(after: .milliseconds(100)) { [weak self] in
                    self?.retryTimer = nil
                    self?.resumeAccepting()
                }
                return
            default:
                return
            }
        }
    }

    /// Stops listening; connections already accepted are not affected.
    package func close() {
        guard fd >= 0 else { return }
        retryTimer?.cancel()
        loop.deregister(fd: fd)
        Glibc.close(fd)
        fd = -1
    }
}
