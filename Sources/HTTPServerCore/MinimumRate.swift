import NetCore

/// Whether a transfer keeps up a minimum rate while it is waiting on the client (a response queued for it, a request
/// body it may send): the waiting time adds up as a shortfall, each byte moved pays `1/rate` seconds of it back (never
/// below nothing), and a shortfall past the window means the client is too slow (see
/// ``HTTPServerLimits/minSendRate``). Time not spent waiting on the client (an empty queue: it caught up) clears it.
///
/// A pure value, updated by a connection's timeout sweep.
struct MinimumRate {
    /// The shortfall, in nanoseconds.
    private(set) var shortfall: UInt64 = 0
    /// The transfer's byte count at the last check.
    private var counted = 0

    /// Updates with `total` bytes moved so far and `elapsed` nanoseconds since the previous check, during which the
    /// transfer was `waiting` on the client; true when the shortfall has passed `window` at `rate` bytes per second
    /// (a rate of 0 never does).
    mutating func check(total: Int, waiting: Bool, elapsed: UInt64, rate: Int64, window: Duration) -> Bool {
        let moved = total > counted ? UInt64(total - counted) : 0
        counted = total
        guard waiting, rate > 0 else {
            shortfall = 0
            return false
        }
        let (scaled, overflow) = moved.multipliedReportingOverflow(by: 1_000_000_000)
        let paid = overflow ? UInt64.max : scaled / UInt64(rate)
        let owed = shortfall &+ elapsed
        shortfall = owed > paid ? owed - paid : 0
        return shortfall > window.nanoseconds
    }

    /// Starts counting again from `total` bytes, with no shortfall.
    mutating func reset(total: Int) {
        shortfall = 0
        counted = total
    }
}
