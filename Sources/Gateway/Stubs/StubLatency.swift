#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Samples a stub's delay from its `latency` distribution (or its fixed `delay`). Results are never negative and are
/// clamped to the distribution's `min`/`max` where given. Normal samples use the Box–Muller transform; log-normal ones
/// are `median × e^(sigma × z)` for a standard normal `z`.
package struct StubLatency: Sendable {
    package let distribution: StubLatencyConfig
    private var rng: SplitMix64
    private var spareNormal: Double?

    package init(_ distribution: StubLatencyConfig, seed: UInt64) {
        self.distribution = distribution
        self.rng = SplitMix64(seed: seed)
    }

    /// A sampler for a stub: its `latency`, else its fixed `delay`.
    package init(stub: StubConfig, seed: UInt64) {
        self.init(stub.latency ?? .fixed(stub.delay), seed: seed)
    }

    package mutating func sample() -> Duration {
        switch distribution {
        case .fixed(let value):
            return max(.zero, value)
        case .uniform(let low, let high):
            let lo = low.seconds
            let hi = high.seconds
            return StubLatency.duration(lo + (hi - lo) * unit())
        case .normal(let mean, let stddev, let low, let high):
            var value = mean.seconds + stddev.seconds * standardNormal()
            if let low { value = max(value, low.seconds) }
            if let high { value = min(value, high.seconds) }
            return StubLatency.duration(value)
        case .lognormal(let median, let sigma, let low, let high):
            var value = median.seconds * exp(sigma * standardNormal())
            if let low { value = max(value, low.seconds) }
            if let high { value = min(value, high.seconds) }
            return StubLatency.duration(value)
        }
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double {
        Double(rng.next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
    }

    mutating func standardNormal() -> Double {
        if let spare = spareNormal {
            spareNormal = nil
            return spare
        }
        var u1 = unit()
        while u1 <= .leastNormalMagnitude { u1 = unit() }
        let u2 = unit()
        let radius = (-2.0 * log(u1)).squareRoot()
        let angle = 2.0 * Double.pi * u2
        spareNormal = radius * sin(angle)
        return radius * cos(angle)
    }

    /// Seconds → duration, clamped to 0 ... 1 day (NaN → 0).
    static func duration(_ seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return .zero }
        let clamped = min(seconds, 86_400)
        return .nanoseconds(Int64(clamped * 1e9))
    }
}
