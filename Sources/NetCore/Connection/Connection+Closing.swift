#if canImport(Glibc)
import Glibc
#endif

/// Closing: after the queue is sent (optionally lingering while the peer still sends), at once, or with a reset.
extension Connection {
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

    func closeOrLinger() {
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
