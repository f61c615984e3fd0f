import CoreMetrics
import Prometheus

/// A swift-metrics `Timer` that records into a Prometheus histogram of seconds held as `Double`s.
///
/// swift-prometheus's own timer (`Histogram<Duration>`) converts each observation to a 128-bit `Duration` and compares
/// it with every bucket as one: about 600 instructions per observation, and a proxied request records two (its
/// duration, the upstream's first byte). A `Double` histogram does the same work with plain comparisons and renders
/// the same exposition: `le` labels print alike for the gateway's buckets (`0.005`, `1.0`, `2.5`), and the sum is in
/// seconds either way.
final class SecondsTimer: TimerHandler, Sendable {
    /// The registry's histogram the observations go to (the same one for the same name and labels, so a timer made
    /// again after a reload counts on in the same series).
    let histogram: ValueHistogram

    init(_ histogram: ValueHistogram) {
        self.histogram = histogram
    }

    func recordNanoseconds(_ duration: Int64) {
        histogram.record(Double(duration) / 1e9)
    }
}
