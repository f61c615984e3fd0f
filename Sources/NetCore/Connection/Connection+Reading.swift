#if canImport(Glibc)
import Glibc
#endif

/// Reading: bytes from the socket to the delegate (through TLS when there is a session), with back-pressure and the
/// peer's end.
extension Connection {
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

    func readAvailable() {
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

    func peerFinished() {
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
}
