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
    @exclusivity(unchecked) package private(set) var fd: Int32
    /// Held strongly until the connection closes (the close breaks the cycle): a weak reference cost a side-table
    /// load on every read and drained write.
    @exclusivity(unchecked) package var delegate: (any ConnectionDelegate)?
    package let remoteAddress: SocketAddress?
    /// Free for the owner: e.g. a deadline in ``EventLoop/now()`` nanoseconds checked by a sweep.
    @exclusivity(unchecked) package var deadline: UInt64 = 0
    /// Time of the last write progress, for send timeouts.
    @exclusivity(unchecked) package private(set) var lastWriteProgress: UInt64 = 0

    private let tls: TLSSession?
    @exclusivity(unchecked) private var connecting: Bool
    @exclusivity(unchecked) private var active = false
    @exclusivity(unchecked) private var closed = false
    @exclusivity(unchecked) private var readPaused = false
    @exclusivity(unchecked) private var readPending = false
    @exclusivity(unchecked) private var readEOF = false
    /// Whether epoll reported a hang-up: then reads continue until EOF instead of stopping at a short read.
    @exclusivity(unchecked) private var hangupSeen = false
    @exclusivity(unchecked) private var writable = true
    @exclusivity(unchecked) private var closeAfterWrites = false
    /// Set by `closeAfterFlush(lingering:)`: once the queue is sent, half-close and linger this way instead of closing.
    private var lingerAfterWrites: LingeringClose?
    /// While lingering (see ``closeAfterFlush(lingering:)``): when it ends at the latest, in ``EventLoop/now()``
    /// nanoseconds; 0 when not lingering.
    @exclusivity(unchecked) private var lingeringUntil: UInt64 = 0
    /// Whether the peer sent anything since the last lingering check.
    @exclusivity(unchecked) private var lingeringReadSome = false
    /// How many more bytes a lingering connection drops before it closes.
    @exclusivity(unchecked) private var lingeringBytesLeft = 0
    private var lingeringTimer: LoopTimer?
    /// Whether the loop will flush this connection before it next waits.
    @exclusivity(unchecked) private var flushScheduled = false
    /// A write failed because the peer is gone: nothing more is written, and the connection closes with this error
    /// once what the peer sent before is read.
    private var writeFailure: SystemError?
    @exclusivity(unchecked) private var writeQueue: [[UInt8]] = []
    @exclusivity(unchecked) private var writeOffset = 0
    @exclusivity(unchecked) package private(set) var pendingWriteBytes = 0
    /// Bytes handed to the kernel so far (ciphertext over TLS), for minimum-rate checks.
    @exclusivity(unchecked) package private(set) var bytesSent = 0
    /// Plaintext written before the TLS handshake finished.
    @exclusivity(unchecked) private var plaintextBeforeHandshake: [[UInt8]] = []

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
        if events & cns_EPOLLOUT() != 0 {
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

    private func becomeActive() {
        active = true
        delegate?.connectionDidBecomeActive(self)
        if !plaintextBeforeHandshake.isEmpty {
            let queued = plaintextBeforeHandshake
            plaintextBeforeHandshake = []
            for bytes in queued { write(bytes) }
        }
    }

    // MARK: Reading

    /// Stops reading until ``resumeReading()`` (back-pressure); the kernel buffer then throttles the peer.
    package func pauseReading() { readPaused = true }

    /// Starts reading again, picking up bytes that arrived while paused.
    package func resumeReading() {
        guard readPaused else { return }
        readPaused = false
        if readPending && !closed {
            loop.executeLocally { [weak self] in self?.readAvailable() }
        }
    }

    private func readAvailable() {
        var budget = 16
        while readPending && !readPaused && !closed && !readEOF {
            if budget == 0 {
                loop.executeLocally { [weak self] in self?.readAvailable() }
                return
            }
            budget -= 1
            let scratch = loop.readScratch
            let count = Glibc.read(fd, scratch.baseAddress, scratch.count)
            if count > 0 {
                // A short read drained the socket; with edge-triggered epoll the next arrival raises a new event, so
                // skip the read that would only return EAGAIN (one read per request instead of two).
                if count < scratch.count && !hangupSeen { readPending = false }
                let bytes = UnsafeRawBufferPointer(start: scratch.baseAddress, count: count)
                if lingeringUntil != 0 {
                    lingeringReadSome = true
                    lingeringBytesLeft -= count
                    if lingeringBytesLeft <= 0 { close() }
                } else if let tls {
                    tlsReceived(bytes, tls)
                } else {
                    delegate?.connection(self, didRead: bytes)
                }
            } else if count == 0 {
                readPending = false
                peerFinished()
            } else {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK {
                    readPending = false
                } else if code != EINTR {
                    close(error: SystemError("read", errno: code))
                }
            }
        }
    }

    private func peerFinished() {
        guard !readEOF else { return }
        readEOF = true
        if lingeringUntil != 0 {
            close()
            return
        }
        if !active {
            close(error: SystemError("read", errno: ECONNRESET))
            return
        }
        delegate?.connectionDidReadEOF(self)
    }

    private func tlsReceived(_ bytes: UnsafeRawBufferPointer, _ tls: TLSSession) {
        tls.feed(bytes)
        if !tls.handshakeComplete {
            tlsAdvanceHandshake(tls)
            if !tls.handshakeComplete || closed { return }
        }
        tlsReadPlaintext(tls)
    }

    private func tlsAdvanceHandshake(_ tls: TLSSession) {
        do {
            let done = try tls.handshake()
            flushTLSOutput(tls)
            if done {
                becomeActive()
                tlsReadPlaintext(tls)
            }
        } catch {
            flushTLSOutput(tls)
            close(error: error)
        }
    }

    private func tlsReadPlaintext(_ tls: TLSSession) {
        while !closed && !readEOF {
            do {
                switch try tls.read(into: loop.plaintextScratch) {
                case .bytes(let count):
                    delegate?.connection(
                        self, didRead: UnsafeRawBufferPointer(start: loop.plaintextScratch.baseAddress, count: count))
                case .wantMore:
                    flushTLSOutput(tls)
                    return
                case .closed:
                    peerFinished()
                    return
                }
            } catch {
                close(error: error)
                return
            }
        }
    }

    // MARK: Writing

    /// Queues `bytes` and writes as much as the socket takes now.
    package func write(_ bytes: [UInt8]) {
        guard !closed, writeFailure == nil, lingeringUntil == 0, !bytes.isEmpty else { return }
        if let tls {
            guard active else {
                plaintextBeforeHandshake.append(bytes)
                return
            }
            do {
                try bytes.withUnsafeBytes { try tls.write($0) }
            } catch {
                close(error: error)
                return
            }
            flushTLSOutput(tls)
            return
        }
        send(bytes)
    }

    private func flushTLSOutput(_ tls: TLSSession) {
        guard tls.hasOutput else { return }
        var output: [UInt8] = []
        tls.takeOutput(into: &output)
        send(output)
    }

    /// Queues `bytes`; the loop sends every connection's queued bytes just before it next waits (one gathered
    /// `sendmsg` per connection), so the answers of one round leave back to back: a peer woken by the first finds the
    /// others already there instead of being woken again for each.
    private func send(_ bytes: [UInt8]) {
        guard !closed, writeFailure == nil else { return }
        enqueue(bytes)
        if !flushScheduled {
            flushScheduled = true
            loop.flushBeforeWaiting(self)
        }
    }

    /// The loop's deferred flush (see ``send(_:)``).
    func flushDeferred() {
        guard flushScheduled else { return }
        flushScheduled = false
        flush()
    }

    /// The first half of the loop's deferred flush when it sends for many connections in one system call (see
    /// ``EventLoop``'s batched flush): describes up to `iovecs.count` queued buffers in `message`; false when there is
    /// nothing this connection can send now. The buffers stay untouched until ``finishBatchedFlush(result:)``.
    func prepareBatchedFlush(_ message: UnsafeMutablePointer<msghdr>, iovecs: UnsafeMutableBufferPointer<iovec>) -> Bool
    {
        guard flushScheduled else { return false }
        flushScheduled = false
        guard writable, !closed, !connecting, writeFailure == nil, !writeQueue.isEmpty else { return false }
        let count = min(writeQueue.count, iovecs.count)
        for index in 0..<count {
            // The queue's arrays are not touched until the send completes, within the loop's same call, so their
            // storage stays where it is.
            writeQueue[index].withUnsafeBytes { raw in
                let skip = index == 0 ? writeOffset : 0
                iovecs[index] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + skip),
                    iov_len: raw.count - skip)
            }
        }
        message.pointee = msghdr()
        message.pointee.msg_iov = iovecs.baseAddress
        message.pointee.msg_iovlen = count
        return true
    }

    /// The second half of a batched flush: `result` is what the send returned (bytes, or a negated `errno`). What is
    /// left in the queue goes out as a plain flush would send it, as does everything when the batched send itself was
    /// refused (see ``BatchSender/refusesSending(_:)``).
    func finishBatchedFlush(result: Int32) {
        guard !closed, writeFailure == nil else { return }
        if BatchSender.refusesSending(result) || takeSendResult(Int(result)) { flush() }
    }

    private func enqueue(_ bytes: [UInt8]) {
        writeQueue.append(bytes)
        pendingWriteBytes += bytes.count
    }

    /// Writes queued bytes with `writev` until the queue is empty or the socket is full.
    private func flush() {
        guard writable, !closed, !connecting, writeFailure == nil else { return }
        while !writeQueue.isEmpty {
            let count = min(writeQueue.count, EventLoop.iovecScratchCount)
            let written: Int = withIOVecs(count: count, into: loop.iovecScratch) { pointer in
                // sendmsg rather than writev: MSG_NOSIGNAL, so a closed peer is EPIPE, never SIGPIPE, in any process.
                var message = msghdr()
                message.msg_iov = UnsafeMutablePointer(mutating: pointer)
                message.msg_iovlen = count
                return Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
            guard takeSendResult(written < 0 ? -Int(errno) : written) else { return }
        }
        writesDrained()
    }

    /// Takes in what one send did (bytes sent, or a negated `errno`); false when nothing more can be sent now (the
    /// socket is full, or the write failed).
    private func takeSendResult(_ result: Int) -> Bool {
        if result >= 0 {
            lastWriteProgress = loop.roundTime
            consume(result)
            return true
        }
        let code = Int32(-result)
        if code == EAGAIN || code == EWOULDBLOCK {
            writable = false
            return false
        }
        if code == EINTR { return true }
        writeFailed(SystemError("sendmsg", errno: code))
        return false
    }

    /// A write failed. When the peer reset or closed, what it sent before is still delivered (an early response
    /// that says why it stopped reading, typically: a client's upload refused with 413) in a job after this one,
    /// then the connection closes with `error`; otherwise it closes now.
    private func writeFailed(_ error: SystemError) {
        guard error.errno == ECONNRESET || error.errno == EPIPE, active else {
            close(error: error)
            return
        }
        writeFailure = error
        writeQueue = []
        writeOffset = 0
        pendingWriteBytes = 0
        closeAfterWrites = false
        readPending = true
        loop.executeLocally { [weak self] in
            guard let self, !self.closed else { return }
            self.readAvailable()
            self.close(error: error)
        }
    }

    private func writesDrained() {
        if closeAfterWrites {
            closeOrLinger()
            return
        }
        delegate?.connectionDidDrainWrites(self)
    }

    private func withIOVecs<R>(
        count: Int, into iovecs: UnsafeMutablePointer<iovec>, _ body: (UnsafePointer<iovec>) -> R
    ) -> R {
        // Pin each queued array's storage for the duration of the call.
        func pin(_ index: Int) -> R {
            if index == count { return body(iovecs) }
            return writeQueue[index].withUnsafeBytes { raw in
                let skip = index == 0 ? writeOffset : 0
                iovecs[index].iov_base = UnsafeMutableRawPointer(mutating: raw.baseAddress! + skip)
                iovecs[index].iov_len = raw.count - skip
                return pin(index + 1)
            }
        }
        return pin(0)
    }

    private func consume(_ written: Int) {
        var remaining = written
        pendingWriteBytes -= written
        bytesSent &+= written
        while remaining > 0, let first = writeQueue.first {
            let available = first.count - writeOffset
            if remaining >= available {
                remaining -= available
                writeQueue.removeFirst()
                writeOffset = 0
            } else {
                writeOffset += remaining
                remaining = 0
            }
        }
    }

    // MARK: Closing

    /// Sends what is queued (and a TLS close_notify), then closes.
    ///
    /// With `lingering`, for a server that answers before it has read everything its peer sends (a request body it
    /// refused or stopped reading): closing a socket with unread bytes makes the kernel send a reset, which can destroy
    /// the answer before the peer has read it, and fails the peer's upload with a broken pipe. So once the queue is
    /// sent, the connection half-closes (the peer reads the end of the answer), then reads and drops whatever the peer
    /// still sends until it closes its side, sends nothing for `lingering.idle`, `lingering.limit` has passed, or
    /// `lingering.maxBytes` were dropped (nginx's lingering close, with a byte bound). It counts as closed meanwhile
    /// (``isClosed``): nothing more is written or delivered.
    package func closeAfterFlush(lingering: LingeringClose? = nil) {
        guard !closed, lingeringUntil == 0 else { return }
        if let lingering { lingerAfterWrites = lingering }
        if let tls, active {
            tls.shutdown()
            flushTLSOutput(tls)
        }
        if pendingWriteBytes == 0 {
            closeOrLinger()
        } else {
            closeAfterWrites = true
        }
    }

    private func closeOrLinger() {
        guard let lingering = lingerAfterWrites, !readEOF, writeFailure == nil, active else {
            close()
            return
        }
        closeAfterWrites = false
        lingeringUntil = EventLoop.now() &+ lingering.limit.nanoseconds
        lingeringBytesLeft = lingering.maxBytes
        guard Glibc.shutdown(fd, Int32(SHUT_WR)) == 0 else {
            close()
            return
        }
        scheduleLingeringCheck(every: lingering.idle)
        // Bytes that arrived while reading was paused are read (and dropped) now, outside the caller's call.
        readPaused = false
        if readPending {
            loop.executeLocally { [weak self] in self?.readAvailable() }
        }
    }

    private func scheduleLingeringCheck(every idle: Duration) {
        lingeringReadSome = false
        lingeringTimer = loop.schedule(after: idle) { [weak self] in
            guard let self, !self.closed else { return }
            if !self.lingeringReadSome || EventLoop.now() >= self.lingeringUntil {
                self.close()
            } else {
                self.scheduleLingeringCheck(every: idle)
            }
        }
    }

    /// Closes now, dropping unwritten bytes.
    package func close(error: (any Error)? = nil) {
        guard !closed else { return }
        if flushScheduled {
            // What was written before the close (a TLS alert, a last response) goes out first, as far as the socket
            // takes it now; a send failure here just closes.
            flushScheduled = false
            flush()
            guard !closed else { return }
        }
        closed = true
        lingeringTimer?.cancel()
        lingeringTimer = nil
        loop.deregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        writeQueue = []
        pendingWriteBytes = 0
        delegate?.connectionDidClose(self, error: error)
        delegate = nil
    }

    /// Closes with a TCP RST instead of FIN, for connections in an unknown state.
    package func reset() {
        guard !closed else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }
}

extension Connection {
    /// Closes a socket that was accepted but will not be served (over the connection limit, draining).
    package static func closeAccepted(_ fd: Int32) {
        Glibc.close(fd)
    }
}
