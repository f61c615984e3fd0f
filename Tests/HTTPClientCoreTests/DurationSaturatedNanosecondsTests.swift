import NetCore
import Testing

@testable import HTTPClientCore

/// The client's one-division conversion of a timeout to nanoseconds agrees with NetCore's `nanoseconds`.
@Suite struct DurationSaturatedNanosecondsTests {
    @Test func agreesWithNetCoreNanoseconds() {
        let durations: [Duration] = [
            .zero, .nanoseconds(1), .nanoseconds(999), .microseconds(1), .milliseconds(250), .seconds(1),
            .seconds(60), .seconds(3600) + .nanoseconds(7), .nanoseconds(-1), .seconds(-5), .milliseconds(-1),
            .seconds(Int64.max / 1_000_000_000), .seconds(Int64.max), Duration(attoseconds: 1_999_999_999),
            Duration(attoseconds: 999_999_999), Duration(attoseconds: -999_999_999)
        ]
        for duration in durations {
            #expect(duration.saturatedNanoseconds == duration.nanoseconds, "\(duration)")
        }
        #expect(Duration.seconds(Int64.max).saturatedNanoseconds == UInt64.max)
        #expect(Duration.seconds(-5).saturatedNanoseconds == 0)
    }
}
