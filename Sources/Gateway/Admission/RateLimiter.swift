import Locking
import NetCore

/// A route's rate limit (`routes[].rate_limit`): each caller may make `burst` calls at once, then one every
/// `interval` (`per / requests`). Shared by every event loop; one lock per call, only for routes that configure it.
///
/// The generic cell rate algorithm: each caller's only state is the time its next call is due, so a caller that has
/// waited long enough to have its whole burst back is the same as one never seen, and is dropped from the table.
/// The table holds at most `maxCallers`; past that (after dropping the idle ones) further callers share one bucket,
/// so memory stays bounded whatever the number of addresses calling.
///
/// Times are monotonic nanoseconds (`EventLoop.now()`), passed in so the limiter holds no clock.
final class RateLimiter: Sendable {
    /// Whether a call may go ahead.
    enum Admission: Equatable {
        case allowed
        /// Refused; the caller's next call is allowed in `retryAfter`.
        case refused(retryAfter: Duration)
    }

    /// Nanoseconds between calls once the burst is spent.
    let interval: UInt64
    /// How far ahead of now a caller's due time may run and still be let through: `burst - 1` intervals.
    let tolerance: UInt64
    let maxCallers: Int

    private struct State {
        /// Per caller, the time its next call is due if it keeps to the rate.
        var due: [String: UInt64] = [:]
        var lastSweep: UInt64 = 0
    }

    private let state = Locked(State())
    /// Idle callers are dropped at most this often (nanoseconds), so a full table of busy callers costs no scan per call.
    private static let sweepEvery: UInt64 = 1_000_000_000
    /// The bucket shared by callers beyond `maxCallers` (addresses and API-key client names hold no NUL).
    static let overflowKey = "\u{0}overflow"

    init(requests: Int, per: Duration, burst: Int, maxCallers: Int = 100_000) {
        interval = max(1, per.nanoseconds / UInt64(max(1, requests)))
        tolerance = interval &* UInt64(max(1, burst) - 1)
        self.maxCallers = max(1, maxCallers)
    }

    /// Admits or refuses one call by `caller` at `now`.
    func admit(_ caller: String, now: UInt64) -> Admission {
        state.withLock { state in
            if now &- state.lastSweep >= Self.sweepEvery && state.due.count >= 1024 { sweep(&state, now: now) }
            var key = caller
            if state.due[key] == nil && state.due.count >= maxCallers {
                if now &- state.lastSweep >= Self.sweepEvery { sweep(&state, now: now) }
                if state.due.count >= maxCallers { key = Self.overflowKey }
            }
            let due = max(state.due[key] ?? now, now)
            if due - now > tolerance {
                return .refused(retryAfter: .nanoseconds(Int64(clamping: due - now - tolerance)))
            }
            state.due[key] = due + interval
            return .allowed
        }
    }

    /// The callers tracked now (idle ones may still be counted until the next sweep).
    var trackedCallers: Int { state.withLock { $0.due.count } }

    /// Drops every caller whose burst has fully come back: it is the same as a caller never seen.
    private func sweep(_ state: inout State, now: UInt64) {
        state.lastSweep = now
        state.due = state.due.filter { $0.value > now }
    }
}
