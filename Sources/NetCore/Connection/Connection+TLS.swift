/// The TLS layer: the handshake, decrypted bytes to the delegate, and the session's output (records, alerts) queued
/// for the socket.
extension Connection {
    func tlsReceived(_ bytes: UnsafeRawBufferPointer, _ tls: TLSSession) {
        tls.feed(bytes)
        if !tls.handshakeComplete {
            tlsAdvanceHandshake(tls)
            if !tls.handshakeComplete || closed { return }
        }
        tlsReadPlaintext(tls)
    }

    func tlsAdvanceHandshake(_ tls: TLSSession) {
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

    func flushTLSOutput(_ tls: TLSSession) {
        let pending = tls.pendingOutputCount
        guard pending > 0 else { return }
        let output = tls.takeOutput(into: loop.outputBuffer(reservingCapacity: pending))
        if !output.isEmpty { send(output) }
    }
}
