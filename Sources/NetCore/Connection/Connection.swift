import CNetShims

#if canImport(Glibc)
import Glibc
#endif

/// Receives a ``Connection``'s events on its loop thread.
package protocol ConnectionDelegate: AnyObject {
    /// The connection is ready for application bytes (after connect and any TLS handshake).
    func connectionDidBecomeActive(_ connection: Connection)
    /// Application bytes arrived (decrypted when TLS). Valid only during the call.
    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer)
    /// The peer finished sending (FIN or TLS close_notify). The connection stays writable.
    func connectionDidReadEOF(_ connection: Connection)
    /// Everything queued has been handed to the kernel.
    func connectionDidDrainWrites(_ connection: Connection)
    /// The connection closed; `error` says why when it was not an orderly close.
    func connectionDidClose(_ connection: Connection, error: (any Error)?)
}

extension ConnectionDelegate {
    package func connectionDidBecomeActive(_ connection: Connection) {}
    package func connectionDidReadEOF(_ connection: Connection) { connection.close() }
    package func connectionDidDrainWrites(_ connection: Connection) {}
}

/// A non-blocking TCP connection owned by one ``EventLoop``, registered once edge-triggered, with an optional TLS layer
/// over memory BIOs and a write queue flushed with `writev`.
///
/// All methods must be called on the loop's thread.
package final class Connection: EventLoopHandler {
    // State is `@exclusivity(unchecked)` where no access can overlap another: it is touched only on the loop thread,
    // and it is a scalar, a reference only ever read or assigned whole, or a value (the write queue) whose in-place
    // mutations call nothing that could reach it again. The runtime's dynamic check (a thread-local access-set update
    // per access, dozens per request) would buy nothing there. Anything mutated in place across a call out (a delegate,
    // a closure) must keep the check.
    package let loop: EventLoop
    @exclusivity(unchecked) package internal(set) var fd: Int32
    /// Held strongly until the connection closes (the close breaks the cycle): a weak reference cost a side-table
    /// load on every read and drained write.
    @exclusivity(unchecked) package var delegate: (any ConnectionDelegate)?
    package let remoteAddress: SocketAddress?
    /// Free for the owner: e.g. a deadline in ``EventLoop/now()`` nanoseconds checked by a sweep.
    @exclusivity(unchecked) package var deadline: UInt64 = 0
    /// Time of the last write progress, for send timeouts.
    @exclusivity(unchecked) package internal(set) var lastWriteProgress: UInt64 = 0

    let tls: TLSSession?
    @exclusivity(unchecked) var connecting: Bool
    @exclusivity(unchecked) var active = false
    @exclusivity(unchecked) var closed = false
    @exclusivity(unchecked) var readPaused = false
    @exclusivity(unchecked) var readPending = false
    @exclusivity(unchecked) var readEOF = false
    /// Whether epoll reported a hang-up: then reads continue until EOF instead of stopping at a short read.
    @exclusivity(unchecked) var hangupSeen = false
    @exclusivity(unchecked) var writable = true
    @exclusivity(unchecked) var closeAfterWrites = false
    /// Set by `closeAfterFlush(lingering:)`: once the queue is sent, half-close and linger this way instead of closing.
    var lingerAfterWrites: LingeringClose?
    /// While lingering (see ``closeAfterFlush(lingering:)``): when it ends at the latest, in ``EventLoop/now()``
    /// nanoseconds; 0 when not lingering.
    @exclusivity(unchecked) var lingeringUntil: UInt64 = 0
    /// Whether the peer sent anything since the last lingering check.
    @exclusivity(unchecked) var lingeringReadSome = false
    /// How many more bytes a lingering connection drops before it closes.
    @exclusivity(unchecked) var lingeringBytesLeft = 0
    var lingeringTimer: LoopTimer?
    /// Whether the loop will flush this connection before it next waits.
    @exclusivity(unchecked) var flushScheduled = false
    /// A write failed because the peer is gone: nothing more is written, and the connection closes with this error
    /// once what the peer sent before is read.
    var writeFailure: SystemError?
    @exclusivity(unchecked) var writeQueue: [[UInt8]] = []
    @exclusivity(unchecked) var writeOffset = 0
    @exclusivity(unchecked) package internal(set) var pendingWriteBytes = 0
    /// Bytes handed to the kernel so far (ciphertext over TLS), for minimum-rate checks.
    @exclusivity(unchecked) package internal(set) var bytesSent = 0
    /// Plaintext written before the TLS handshake finished.
    @exclusivity(unchecked) var plaintextBeforeHandshake: [[UInt8]] = []

    /// Whether this connection speaks TLS.
    package var isTLS: Bool { tls != nil }
    /// Whether the connection is closed, or closing after a failed write (what the peer sent before may still be
    /// delivered; nothing more is written), or lingering before it closes.
    package var isClosed: Bool { closed || writeFailure != nil || lingeringUntil != 0 }
    /// The ALPN protocol agreed in the TLS handshake.
    package var negotiatedProtocol: String? { tls?.negotiatedProtocol }
    /// The peer's certificate once the TLS handshake is done (the server's; or the client's under mutual TLS).
    package var peerCertificate: TLSPeerCertificate? { tls?.peerCertificate }

    /// Wraps an accepted socket; call ``start()`` to register it.
    package init(acceptedFD fd: Int32, loop: EventLoop, remoteAddress: SocketAddress?, tls: TLSContext?) throws {
        self.fd = fd
        self.loop = loop
        self.remoteAddress = remoteAddress
        self.tls = try tls.map { try TLSSession(context: $0, serverName: nil) }
        self.connecting = false
    }

    /// Starts a connection to `address` (a numeric address), TLS when `tls` is given with `serverName` for SNI and
    /// the host-name check. The delegate hears ``ConnectionDelegate/connectionDidBecomeActive(_:)`` or a close.
    package init(connectingTo address: SocketAddress, loop: EventLoop, tls: TLSContext?, serverName: String?) throws {
        let (fd, connected) = try Socket.startConnect(to: address)
        self.fd = fd
        self.loop = loop
        self.remoteAddress = address
        do {
            self.tls = try tls.map { try TLSSession(context: $0, serverName: serverName) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.connecting = !connected
    }

    /// Registers with the loop and starts reading.
    package func start() throws {
        lastWriteProgress = EventLoop.now()
        do {
            try loop.register(fd: fd, handler: self)
        } catch {
            delegate = nil
            throw error
        }
        if !connecting { didConnect() }
    }

    package func handleEvents(_ events: UInt32) {
        if closed { return }
        if connecting {
            if events & (cns_EPOLLOUT() | cns_EPOLLERR() | cns_EPOLLHUP()) != 0 {
                let error = Socket.pendingError(fd)
                if error != 0 {
                    close(error: SystemError("connect", errno: error))
                    return
                }
                connecting = false
                didConnect()
            }
            return
        }
        // An edge reports every readiness the socket has, so a socket that stayed writable says so again with each
        // read: that is news only when a send was refused (or bytes wait), otherwise flushing would find nothing to
        // send and tell the delegate again that its writes drained.
        if events & cns_EPOLLOUT() != 0, !writable || !writeQueue.isEmpty {
            writable = true
            flush()
        }
        if closed { return }
        if events & (cns_EPOLLRDHUP() | cns_EPOLLHUP() | cns_EPOLLERR()) != 0 { hangupSeen = true }
        if events & (cns_EPOLLIN() | cns_EPOLLRDHUP() | cns_EPOLLHUP() | cns_EPOLLERR()) != 0 {
            readPending = true
            readAvailable()
        }
    }

    private func didConnect() {
        if let tls {
            tlsAdvanceHandshake(tls)
        } else {
            becomeActive()
        }
    }

    func becomeActive() {
        active = true
        delegate?.connectionDidBecomeActive(self)
        if !plaintextBeforeHandshake.isEmpty {
            let queued = plaintextBeforeHandshake
            plaintextBeforeHandshake = []
            for bytes in queued { write(bytes) }
        }
    }
}

extension Connection {
    /// Closes a socket that was accepted but will not be served (over the connection limit, draining).
    package static func closeAccepted(_ fd: Int32) {
        Glibc.close(fd)
    }
}
