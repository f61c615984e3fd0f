import Locking
import NetCore

/// The access-log line of a response whose body is relayed as it arrives: written once the body has ended or was cut
/// (not when the head goes out), with the bytes actually relayed, the whole duration, and why it was cut, if it was.
/// The handler hands over the finished record (``arm(_:)``) and the relay reports the body's end (``end(bytes:cut:)``),
/// in either order.
final class RelayedResponseLog: Sendable {
    private struct State {
        var record: AccessRecord?
        var outcome: (bytes: Int, cut: String?)?
    }

    private let state = Locked(State())
    private let telemetry: Telemetry
    private let started: ContinuousClock.Instant
    /// A WebSocket's client side, whose bytes are the line's `bytes_in`.
    private let tunnel: WebSocketTunnel?
    /// Counts the lines not written yet (one from here until this one is).
    private let pending: AtomicCounter?

    init(
        telemetry: Telemetry, started: ContinuousClock.Instant, tunnel: WebSocketTunnel? = nil,
        pending: AtomicCounter? = nil
    ) {
        self.telemetry = telemetry
        self.started = started
        self.tunnel = tunnel
        self.pending = pending
        _ = pending?.add(1)
    }

    /// The request's record, complete but for the body.
    func arm(_ record: AccessRecord) {
        let ready = state.withLock { state -> (AccessRecord, (bytes: Int, cut: String?))? in
            state.record = record
            return state.outcome.map { (record, $0) }
        }
        if let (record, outcome) = ready { write(record, outcome) }
    }

    /// The body ended after `bytes` bytes; `cut` says why when it did not end normally.
    func end(bytes: Int, cut: String?) {
        let ready = state.withLock { state -> (AccessRecord, (bytes: Int, cut: String?))? in
            state.outcome = (bytes, cut)
            return state.record.map { ($0, (bytes, cut)) }
        }
        if let (record, outcome) = ready { write(record, outcome) }
    }

    private func write(_ record: AccessRecord, _ outcome: (bytes: Int, cut: String?)) {
        var record = record
        record.bytesOut = outcome.bytes
        if let tunnel {
            record.bytesIn = tunnel.bytesRelayed
            record.timedDuration = record.duration
        }
        record.duration = ContinuousClock.now - started
        if let cut = outcome.cut { record.upstreamError = record.upstreamError ?? cut }
        telemetry.record(record)
        _ = pending?.add(-1)
    }
}
