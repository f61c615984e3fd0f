import Locking

/// The gateway's latency histograms (``LatencyHistogram``) by metric name and labels, rendered after the Prometheus
/// registry's metrics on `/metrics`.
///
/// Like swift-prometheus's registry, it hands out the same histogram for the same name and labels, so a handle made
/// again after a reload counts on in the same series.
final class LatencyHistograms: Sendable {
    private struct Family {
        let help: String
        var series: [LatencyHistogram]
    }

    private let families = Locked<[String: Family]>([:])

    /// The histogram of metric `name` (with `help`, rendered as its `# HELP` line when not empty) for `labels`, made
    /// with `buckets` the first time.
    func histogram(name: String, help: String, labels: [(String, String)], buckets: [Double]) -> LatencyHistogram {
        let rendered = LatencyHistogram.renderedLabels(labels)
        return families.withLock { families in
            var family = families[name] ?? Family(help: help, series: [])
            if let known = family.series.first(where: { $0.renderedLabels == rendered }) { return known }
            let made = LatencyHistogram(labels: labels, buckets: buckets)
            family.series.append(made)
            families[name] = family
            return made
        }
    }

    /// Stops exporting `histogram`.
    func remove(_ histogram: LatencyHistogram) {
        families.withLock { families in
            for name in families.keys {
                families[name]?.series.removeAll { $0 === histogram }
                if families[name]?.series.isEmpty == true { families[name] = nil }
            }
        }
    }

    /// Appends every family's `# HELP` and `# TYPE` lines and its series, in the Prometheus text format, by name.
    func emit(into buffer: inout [UInt8]) {
        let families = families.withLock { $0 }
        for (name, family) in families.sorted(by: { $0.key < $1.key }) {
            if !family.help.isEmpty {
                buffer.append(contentsOf: "# HELP \(name) ".utf8)
                for byte in family.help.utf8 {
                    if byte == UInt8(ascii: "\\") { buffer.append(UInt8(ascii: "\\")) }
                    buffer.append(byte == UInt8(ascii: "\n") ? UInt8(ascii: " ") : byte)
                }
                buffer.append(UInt8(ascii: "\n"))
            }
            buffer.append(contentsOf: "# TYPE \(name) histogram\n".utf8)
            for histogram in family.series { histogram.emit(name: name, into: &buffer) }
        }
    }
}
