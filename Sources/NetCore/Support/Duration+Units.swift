/// The units the event loops, the timers and the configuration read a `Duration` in.
///
/// Each reads `attoseconds` (one 128-bit integer) rather than `components`, whose split into seconds and
/// attoseconds is a 128-bit division per read (about 200 instructions, against about 16 here for a duration under
/// 18 s); these run several times per request (deadlines, timers, the access log, latency histograms).
extension Duration {
    /// The duration in whole nanoseconds, clamped to zero and `UInt64.max`.
    package var nanoseconds: UInt64 {
        let attoseconds = self.attoseconds
        guard attoseconds > 0 else { return 0 }
        if attoseconds <= Int128(UInt64.max) { return UInt64(truncatingIfNeeded: attoseconds) / 1_000_000_000 }
        return UInt64(clamping: attoseconds / 1_000_000_000)
    }

    /// The duration in seconds as a `Double`.
    package var seconds: Double { Double(attoseconds) / 1e18 }

    /// The duration in whole milliseconds, rounded toward zero and saturating at the bounds of `Int64`.
    package var milliseconds: Int64 { Int64(clamping: attoseconds / 1_000_000_000_000_000) }
}
