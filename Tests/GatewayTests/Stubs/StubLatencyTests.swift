import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct StubLatencyTests {
    static func milliseconds(_ duration: Duration) -> Double { duration.seconds * 1000 }

    func stats(_ config: StubLatencyConfig, seed: UInt64 = 1, count: Int = 10_000) -> (
        mean: Double, sd: Double, min: Double, max: Double
    ) {
        var sampler = StubLatency(config, seed: seed)
        let values = (0..<count).map { _ in Self.milliseconds(sampler.sample()) }
        let mean = values.reduce(0, +) / Double(count)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count)
        return (mean, variance.squareRoot(), values.min() ?? 0, values.max() ?? 0)
    }

    @Test func fixed() {
        let s = stats(.fixed(.milliseconds(50)), count: 100)
        #expect(s.min == 50 && s.max == 50)
    }

    @Test func uniformMeanAndBounds() {
        let s = stats(.uniform(min: .milliseconds(10), max: .milliseconds(30)))
        #expect(abs(s.mean - 20) < 0.5)
        #expect(s.min >= 10 && s.max <= 30)
        #expect(abs(s.sd - 20 / 12.0.squareRoot()) < 0.3)
    }

    @Test func normalMeanAndStddev() {
        let s = stats(.normal(mean: .milliseconds(200), stddev: .milliseconds(50), min: nil, max: nil))
        #expect(abs(s.mean - 200) < 2.5)
        #expect(abs(s.sd - 50) < 2.5)
    }

    @Test func normalIsClampedAtZeroAndBounds() {
        let s = stats(.normal(mean: .milliseconds(1), stddev: .milliseconds(100), min: nil, max: nil))
        #expect(s.min >= 0)
        let bounded = stats(
            .normal(
                mean: .milliseconds(100), stddev: .milliseconds(100), min: .milliseconds(50),
                max: .milliseconds(120)))
        #expect(bounded.min >= 49.999_999 && bounded.max <= 120.000_001)
    }

    /// Log-normal: the median is `median`, the natural logarithms have standard deviation `sigma`, and the tail is
    /// long (the 99th percentile is `median × e^(2.326 × sigma)`), within the bounds when given.
    @Test func lognormalMedianSigmaAndTail() {
        var sampler = StubLatency(.lognormal(median: .milliseconds(80), sigma: 0.5, min: nil, max: nil), seed: 7)
        let values = (0..<20_000).map { _ in Self.milliseconds(sampler.sample()) }.sorted()
        let median = values[values.count / 2]
        let p99 = values[values.count * 99 / 100]
        #expect(abs(median - 80) < 2, "median \(median)")
        #expect(abs(p99 - 80 * exp(2.326 * 0.5)) < 15, "p99 \(p99)")
        let logs = values.map { log($0) }
        let mean = logs.reduce(0, +) / Double(logs.count)
        let squares: Double = logs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
        let sd = (squares / Double(logs.count)).squareRoot()
        #expect(abs(sd - 0.5) < 0.02, "sigma \(sd)")
        #expect(values.first! > 0)

        let bounded = stats(
            .lognormal(
                median: .milliseconds(80), sigma: 1, min: .milliseconds(20),
                max: .milliseconds(300)))
        #expect(bounded.min >= 19.999_999 && bounded.max <= 300.000_001)
        #expect(stats(.lognormal(median: .milliseconds(80), sigma: 0, min: nil, max: nil), count: 100).max == 80)
    }

    @Test func deterministicWithASeed() {
        var a = StubLatency(.normal(mean: .milliseconds(5), stddev: .milliseconds(2), min: nil, max: nil), seed: 99)
        var b = StubLatency(.normal(mean: .milliseconds(5), stddev: .milliseconds(2), min: nil, max: nil), seed: 99)
        var c = StubLatency(.normal(mean: .milliseconds(5), stddev: .milliseconds(2), min: nil, max: nil), seed: 100)
        let first = (0..<100).map { _ in a.sample() }
        #expect(first == (0..<100).map { _ in b.sample() })
        #expect(first != (0..<100).map { _ in c.sample() })
    }

    @Test func stubDelayWithoutLatencyIsFixed() {
        var stub = StubConfig()
        stub.delay = .milliseconds(20)
        var sampler = StubLatency(stub: stub, seed: 1)
        #expect(sampler.sample() == .milliseconds(20))
    }
}
