import CoreMetrics
import Synchronization

/// A latency histogram: the gateway's swift-metrics `Timer`, in seconds, rendered in the Prometheus text format.
///
/// swift-prometheus's histograms take a pthread mutex and add one to every bucket at or above the observation, about
/// 1,300 instructions for the two timings of a proxied request. Here an observation finds its one bucket among
/// nanosecond bounds and adds to it, and to the sum, atomically: no lock, and the cumulative counts Prometheus wants
/// are summed when `/metrics` is rendered (a scrape, not a request). The exposition is the same as swift-prometheus's
/// `Histogram<Double>`: `le` labels print as `Double`s (`0.005`, `1.0`), the sum in seconds.
final class LatencyHistogram: TimerHandler, Sendable {
    /// The series' labels as rendered between braces, without the braces (`route="users"`); empty without labels.
    let renderedLabels: [UInt8]
    /// The buckets' upper bounds in seconds, ascending, as their `le` labels print them.
    private let bucketLabels: [String]
    /// The same bounds in nanoseconds: an observation is compared as the integer it arrives as.
    private let bounds: [Int64]
    /// Observations per bucket, not cumulative; the last counts those above every bound (`+Inf` only).
    private let counts: [Counter]
    /// The sum of the observations in seconds: a `Double`'s bits, added to by compare-and-exchange.
    private let sumBits = Atomic<UInt64>(0)

    /// One bucket's count (an `Atomic` cannot be an array's element).
    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// A histogram with `buckets` (upper bounds in seconds, ascending) whose series has `labels`.
    init(labels: [(String, String)], buckets: [Double]) {
        renderedLabels = Self.renderedLabels(labels)
        bucketLabels = buckets.map(\.description)
        bounds = buckets.map { Int64(($0 * 1e9).rounded()) }
        counts = (0...buckets.count).map { _ in Counter() }
    }

    func recordNanoseconds(_ duration: Int64) {
        let nanoseconds = max(duration, 0)
        var bucket = 0
        while bucket < bounds.count, nanoseconds > bounds[bucket] { bucket += 1 }
        counts[bucket].value.wrappingAdd(1, ordering: .relaxed)
        let seconds = Double(nanoseconds) / 1e9
        var old = sumBits.load(ordering: .relaxed)
        while true {
            let (exchanged, found) = sumBits.weakCompareExchange(
                expected: old, desired: (Double(bitPattern: old) + seconds).bitPattern, ordering: .relaxed)
            if exchanged { return }
            old = found
        }
    }

    /// Appends the series' `_bucket` (cumulative), `_sum` and `_count` lines for metric `name`.
    func emit(name: String, into buffer: inout [UInt8]) {
        var total = 0
        for (bucket, label) in bucketLabels.enumerated() {
            total += counts[bucket].value.load(ordering: .relaxed)
            appendBucket(name: name, le: label, count: total, into: &buffer)
        }
        total += counts[bounds.count].value.load(ordering: .relaxed)
        appendBucket(name: name, le: "+Inf", count: total, into: &buffer)
        appendLine(
            name: name, suffix: "_sum", value: Double(bitPattern: sumBits.load(ordering: .relaxed)).description,
            into: &buffer)
        appendLine(name: name, suffix: "_count", value: String(total), into: &buffer)
    }

    private func appendBucket(name: String, le: String, count: Int, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: name.utf8)
        buffer.append(contentsOf: "_bucket{".utf8)
        if !renderedLabels.isEmpty {
            buffer.append(contentsOf: renderedLabels)
            buffer.append(UInt8(ascii: ","))
        }
        buffer.append(contentsOf: "le=\"\(le)\"} \(count)\n".utf8)
    }

    private func appendLine(name: String, suffix: String, value: String, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: name.utf8)
        buffer.append(contentsOf: suffix.utf8)
        if !renderedLabels.isEmpty {
            buffer.append(UInt8(ascii: "{"))
            buffer.append(contentsOf: renderedLabels)
            buffer.append(UInt8(ascii: "}"))
        }
        buffer.append(contentsOf: " \(value)\n".utf8)
    }

    /// `name="value"` pairs joined by commas, each value escaped as the text format requires (backslash, double
    /// quote, line feed).
    static func renderedLabels(_ labels: [(String, String)]) -> [UInt8] {
        var rendered: [UInt8] = []
        for (index, (name, value)) in labels.enumerated() {
            if index > 0 { rendered.append(UInt8(ascii: ",")) }
            rendered.append(contentsOf: name.utf8)
            rendered.append(contentsOf: "=\"".utf8)
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): rendered.append(contentsOf: #"\\"#.utf8)
                case UInt8(ascii: "\""): rendered.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\n"): rendered.append(contentsOf: #"\n"#.utf8)
                default: rendered.append(byte)
                }
            }
            rendered.append(UInt8(ascii: "\""))
        }
        return rendered
    }
}
