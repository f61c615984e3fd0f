import HTTPWire
import NetCore

/// An HTTP/2 connection, client or server side: an ``HTTPWire/HTTP2Session`` driven over a ``NetCore/Connection``.
///
/// The extension is the one implementation of how both sides move bytes between the two: what is read is fed to the
/// session and its events handled (``receive(_:)``); the session's output is written while the socket's backlog stays
/// under ``writeHighWater``, and the events writing produces are handled, twice at most per flush (``flush()``); sends
/// made together leave in one write after the current loop job (``scheduleFlush()``). The conforming connection says
/// what each event means (``handle(_:)``), what a fatal session error does, and when it closes.
///
/// Loop thread only. The methods are `@inlinable`, so each conforming connection gets them specialized: no call
/// through a witness table.
package protocol HTTP2Connection: AnyObject {
    var connection: Connection { get }
    var session: HTTP2Session { get }
    /// Whether ``scheduleFlush()`` has a flush scheduled (its state, kept by the connection).
    var flushScheduled: Bool { get set }
    /// Acts on one of the session's events.
    func handle(_ event: consuming HTTP2Event)
    /// The session failed with a fatal `error` (reading, or making output): write what it has, and close.
    func sessionFailed(_ error: HTTP2Error)
    /// A flush wrote output and the connection is still open (the client reports upload progress here).
    func outputWritten()
    /// Whether the connection closes once its output is written although the session is not finished.
    var closesWhenFlushed: Bool { get }
    /// Closes the connection once its output is written: the session is finished, or ``closesWhenFlushed``.
    func closeAfterOutput()
}

extension HTTP2Connection {
    /// Output is not pulled from the session while this much waits for the socket.
    @inlinable package static var writeHighWater: Int { 256 * 1024 }

    @inlinable package func outputWritten() {}

    /// Feeds `bytes` read from the peer to the session, handles the events, and writes the output.
    @inlinable package func receive(_ bytes: UnsafeRawBufferPointer) {
        do {
            try session.feed(bytes)
        } catch {
            sessionFailed(error)
            return
        }
        processEvents()
        flush()
    }

    /// Hands the session's waiting events to ``handle(_:)``, in order; returns whether there were any.
    @inlinable @discardableResult package func processEvents() -> Bool {
        let session = self.session
        var any = false
        while let event = session.nextEvent() {
            any = true
            handle(event)
        }
        return any
    }

    /// Writes the session's output now (one write), handles the events sending produced, and closes when the
    /// session is done.
    @inlinable package func flush() {
        // Read once: each read of a requirement is a call through the conformance (and an access check).
        let connection = self.connection
        let session = self.session
        guard !connection.isClosed else { return }
        for _ in 0..<2 {
            let room = Self.writeHighWater - connection.pendingWriteBytes
            guard room > 0 else { break }
            do {
                try session.drainOutput(limit: room) { connection.write($0) }
            } catch {
                sessionFailed(error)
                return
            }
            if connection.isClosed { return }
            outputWritten()
            // Sending can produce events (.windowAvailable, .streamClosed).
            guard processEvents() else { break }
        }
        if (session.isFinished && !session.wantsWrite) || closesWhenFlushed { closeAfterOutput() }
    }

    /// Flushes after the current loop job, so several sends made together leave in one write.
    @inlinable package func scheduleFlush() {
        guard !flushScheduled, !connection.isClosed else { return }
        flushScheduled = true
        connection.loop.executeLocally { [self] in
            flushScheduled = false
            flush()
        }
    }

    /// The connection's queue drained (``NetCore/ConnectionDelegate/connectionDidDrainWrites(_:)``): output the session
    /// held back goes out after the current job. Called from inside `Connection.write` too: never flushes
    /// re-entrantly.
    @inlinable package func writesDrained() {
        if session.wantsWrite { scheduleFlush() }
    }

    /// Everything the session has to send now, with no limit (after a fatal error: it may hold a GOAWAY).
    @inlinable package func remainingOutput() -> [UInt8] {
        var output: [UInt8] = []
        try? session.drainOutput(into: &output)
        return output
    }
}
