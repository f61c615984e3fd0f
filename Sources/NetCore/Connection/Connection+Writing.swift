#if canImport(Glibc)
import Glibc
#endif

/// Writing: the write queue, sent with one gathered `sendmsg` per connection just before the loop waits (alone, or
/// batched with other connections' by the loop), and what a failed send does.
extension Connection {
    /// Queues `bytes` and writes as much as the socket takes now.
    package func write(_ bytes: [UInt8]) {
        guard acceptsWrites, !bytes.isEmpty else { return }
        guard let tls else {
            send(bytes)
            return
        }
        bytes.withUnsafeBytes { write($0, over: tls) { bytes } }
    }

    /// Queues a copy of `bytes` and writes as much as the socket takes now (``write(_:)-([UInt8])``); over TLS the
    /// bytes are encrypted in place, without a copy.
    package func write(_ bytes: UnsafeRawBufferPointer) {
        guard acceptsWrites, !bytes.isEmpty else { return }
        guard let tls else {
            var copy = outputBuffer(reservingCapacity: bytes.count)
            copy.append(contentsOf: bytes)
            send(copy)
            return
        }
        write(bytes, over: tls) { Array(bytes) }
    }

    /// An empty buffer with room for `capacity` bytes, to assemble bytes in for ``write(_:)-([UInt8])``: the storage
    /// of a buffer already sent on this loop when there is one with the room (see
    /// ``EventLoop/outputBuffer(reservingCapacity:)``), else a new one.
    package func outputBuffer(reservingCapacity capacity: Int) -> [UInt8] {
        loop.outputBuffer(reservingCapacity: capacity)
    }

    /// Whether writes are still taken: not closed, no failed send, not lingering.
    private var acceptsWrites: Bool { !closed && writeFailure == nil && lingeringUntil == 0 }

    /// Encrypts `bytes` and queues the ciphertext; before the handshake is done, keeps `kept()` (the bytes as an
    /// array) to write once it is. A failed encryption closes the connection.
    private func write(_ bytes: UnsafeRawBufferPointer, over tls: TLSSession, kept: () -> [UInt8]) {
        guard active else {
            plaintextBeforeHandshake.append(kept())
            return
        }
        do {
            try tls.write(bytes)
        } catch {
            close(error: error)
            return
        }
        flushTLSOutput(tls)
    }

    /// Queues `bytes`; the loop sends every connection's queued bytes just before it next waits (one gathered
    /// `sendmsg` per connection), so the answers of one round leave back to back: a peer woken by the first finds the
    /// others already there instead of being woken again for each.
    func send(_ bytes: [UInt8]) {
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
    func flush() {
        guard writable, !closed, !connecting, writeFailure == nil else { return }
        while !writeQueue.isEmpty {
            let count = min(writeQueue.count, EventLoop.iovecScratchCount)
            let scratch = loop.iovecScratch
            let written: Int
            if count == 1 {
                // One buffer (an answer is usually assembled into one): borrowed in place, without the nested
                // closures that pin many, which cost a retain and release of the connection (twice) and the buffer.
                let skip = writeOffset
                let fd = self.fd
                written = writeQueue[0].withUnsafeBytes { raw in
                    scratch[0] = iovec(
                        iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + skip), iov_len: raw.count - skip)
                    return Self.send(fd: fd, scratch, count: 1)
                }
            } else {
                written = withIOVecs(count: count, into: scratch) { [fd] pointer in
                    Self.send(fd: fd, pointer, count: count)
                }
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

    /// Sends `count` buffers described at `iovecs` on `fd`; the bytes sent, or -1 with `errno` set.
    private static func send(fd: Int32, _ iovecs: UnsafePointer<iovec>, count: Int) -> Int {
        // sendmsg rather than writev: MSG_NOSIGNAL, so a closed peer is EPIPE, never SIGPIPE, in any process.
        var message = msghdr()
        message.msg_iov = UnsafeMutablePointer(mutating: iovecs)
        message.msg_iovlen = count
        return Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
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
                loop.keepForReuse(writeQueue.removeFirst())
                writeOffset = 0
            } else {
                writeOffset += remaining
                remaining = 0
            }
        }
    }
}
