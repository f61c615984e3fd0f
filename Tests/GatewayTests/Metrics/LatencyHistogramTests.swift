import Foundation
import Testing

@testable import Gateway

/// The gateway's latency histograms: bucket boundaries, the rendered exposition and the series kept across handles.
@Suite struct LatencyHistogramTests {
    private static let buckets: [Double] = [0.005, 0.01, 1, 2.5]

    private static func text(_ histograms: LatencyHistograms) -> String {
        var buffer: [UInt8] = []
        histograms.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test func anObservationCountsInTheFirstBucketAtOrAboveItAndEveryBucketIsCumulative() {
        let histograms = LatencyHistograms()
        let histogram = histograms.histogram(
            name: "latency_seconds", help: "Latency", labels: [("route", "users")], buckets: Self.buckets)
        histogram.recordNanoseconds(5_000_000)  // exactly 5 ms: in `le="0.005"`
        histogram.recordNanoseconds(5_000_001)  // just above: in `le="0.01"`
        histogram.recordNanoseconds(-3)  // a clock step backwards counts as zero
        histogram.recordNanoseconds(3_000_000_000)  // above every bound: `+Inf` only
        let text = Self.text(histograms)
        let expected = """
            # HELP latency_seconds Latency
            # TYPE latency_seconds histogram
            latency_seconds_bucket{route="users",le="0.005"} 2
            latency_seconds_bucket{route="users",le="0.01"} 3
            latency_seconds_bucket{route="users",le="1.0"} 3
            latency_seconds_bucket{route="users",le="2.5"} 3
            latency_seconds_bucket{route="users",le="+Inf"} 4
            latency_seconds_sum{route="users"} \((0.005 + 0.005000001) + 3.0)
            latency_seconds_count{route="users"} 4

            """
        #expect(text == expected)
    }

    @Test func aSeriesWithoutLabelsHasNoBraces() {
        let histograms = LatencyHistograms()
        histograms.histogram(name: "plain_seconds", help: "", labels: [], buckets: [1]).recordNanoseconds(1)
        #expect(
            Self.text(histograms) == """
                # TYPE plain_seconds histogram
                plain_seconds_bucket{le="1.0"} 1
                plain_seconds_bucket{le="+Inf"} 1
                plain_seconds_sum 1e-09
                plain_seconds_count 1

                """)
    }

    @Test func labelValuesAreEscaped() {
        let histograms = LatencyHistograms()
        _ = histograms.histogram(name: "x_seconds", help: "", labels: [("route", "a\"b\\c\nd")], buckets: [1])
        #expect(Self.text(histograms).contains(#"x_seconds_count{route="a\"b\\c\nd"} 0"#))
    }

    @Test func theSameNameAndLabelsGiveTheSameSeriesAndARemovedOneIsNoLongerExported() {
        let histograms = LatencyHistograms()
        let first = histograms.histogram(name: "y_seconds", help: "", labels: [("route", "a")], buckets: [1])
        let again = histograms.histogram(name: "y_seconds", help: "", labels: [("route", "a")], buckets: [1])
        let other = histograms.histogram(name: "y_seconds", help: "", labels: [("route", "b")], buckets: [1])
        #expect(first === again)
        #expect(first !== other)
        first.recordNanoseconds(1)
        again.recordNanoseconds(1)
        #expect(Self.text(histograms).contains(#"y_seconds_count{route="a"} 2"#))
        histograms.remove(first)
        let text = Self.text(histograms)
        #expect(!text.contains(#"route="a""#))
        #expect(text.contains(#"y_seconds_count{route="b"} 0"#))
        histograms.remove(other)
        #expect(Self.text(histograms).isEmpty)
    }

    @Test func observationsFromManyThreadsAreAllCounted() async {
        let histogram = LatencyHistograms().histogram(name: "z_seconds", help: "", labels: [], buckets: [0.5, 1])
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for sample in 0..<10_000 { histogram.recordNanoseconds(Int64(thread * 400_000_000 + sample)) }
                }
            }
        }
        var buffer: [UInt8] = []
        histogram.emit(name: "z_seconds", into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        // Threads 0 and 1 stay at or below 0.5 s, thread 2 below 1 s, thread 3 above.
        #expect(text.contains(#"z_seconds_bucket{le="0.5"} 20000"#))
        #expect(text.contains(#"z_seconds_bucket{le="1.0"} 30000"#))
        #expect(text.contains("z_seconds_count 40000"))
    }
}
