/// The units the event loops, the timers and the configuration read a `Duration` in.
extension Duration {
    /// The duration in whole nanoseconds, clamped to zero and `UInt64.max`.
    package var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        // A negative duration of less than a second has whole seconds 0 and negative attoseconds.
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max }
        return whole &+ UInt64(attoseconds / 1_000_000_000)
    }

    /// The duration in seconds as a `Double`.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in whole milliseconds, rounded toward zero and saturating at the bounds of `Int64`.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? Int64.min : Int64.max }
        return ms.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue
    }
}
