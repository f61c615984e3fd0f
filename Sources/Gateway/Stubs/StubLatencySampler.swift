import Locking

/// Samples a stub's delay (fixed, uniform or normal) and whether a response is an injected error, from one seeded
/// generator shared by every caller.
final class StubLatencySampler: Sendable {
    private let errorRate: Double
    private let state: Locked<(latency: StubLatency, errors: SplitMix64)>

    init(stub: StubConfig, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        errorRate = stub.errorRate
        state = Locked((StubLatency(stub: stub, seed: seed), SplitMix64(seed: seed ^ 0x9e37_79b9_7f4a_7c15)))
    }

    /// The next delay in seconds.
    func nextDelay() -> Double {
        state.withLock { $0.latency.sample() }.seconds
    }

    /// Whether the next response is an injected error (`error_rate`).
    func nextIsError() -> Bool {
        guard errorRate > 0 else { return false }
        return state.withLock { Double(($0.errors.next() >> 11)) / 9_007_199_254_740_992.0 } < errorRate
    }
}
