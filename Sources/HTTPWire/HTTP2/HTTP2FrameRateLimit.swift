/// A token bucket for frames of one kind a peer sends (RST_STREAM): ``burst`` at once, refilled by ``ratePerSecond``
/// each whole second, as nghttp2's own limits count. The session checks it before nghttp2 does, so that it is the one
/// to end a flood, with a GOAWAY whose debug data names it.
///
/// A pure state machine; times are monotonic nanoseconds.
package struct HTTP2FrameRateLimit: Sendable, Hashable {
    package let burst: UInt64
    package let ratePerSecond: UInt64
    private var tokens: UInt64
    private var second: UInt64?

    package init(burst: UInt64, ratePerSecond: UInt64) {
        self.burst = max(1, burst)
        self.ratePerSecond = ratePerSecond
        self.tokens = self.burst
    }

    /// Takes a token for one frame at `now`; false when none is left (the peer floods).
    package mutating func take(now: UInt64) -> Bool {
        let current = now / 1_000_000_000
        if let second, current > second {
            let (refill, overflow) = (current - second).multipliedReportingOverflow(by: ratePerSecond)
            tokens = overflow || refill >= burst - tokens ? burst : tokens + refill
        }
        second = current
        guard tokens > 0 else { return false }
        tokens -= 1
        return true
    }
}
