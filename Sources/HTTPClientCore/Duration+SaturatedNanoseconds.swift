extension Duration {
    /// The duration in whole nanoseconds, as NetCore's `nanoseconds` gives it (0 when negative, `UInt64.max` when it
    /// does not fit), through one 128-bit division of its attoseconds: `nanoseconds` goes through `components`, which
    /// divides twice (about 210 instructions against some 40), and the client converts a timeout on every request.
    var saturatedNanoseconds: UInt64 {
        let nanoseconds = attoseconds / 1_000_000_000
        if nanoseconds <= 0 { return 0 }
        return nanoseconds > Int128(UInt64.max) ? .max : UInt64(nanoseconds)
    }
}
