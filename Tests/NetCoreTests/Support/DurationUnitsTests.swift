import Testing

@testable import NetCore

/// The units the loops, timers and configuration read a `Duration` in, computed from its attoseconds.
@Suite struct DurationUnitsTests {
    @Test func nanosecondsRoundTowardZeroAndSaturate() {
        let cases: [(Duration, UInt64)] = [
            (.zero, 0), (.nanoseconds(1), 1), (.nanoseconds(999), 999), (.microseconds(1), 1_000),
            (.milliseconds(250), 250_000_000), (.seconds(1), 1_000_000_000), (.seconds(60), 60_000_000_000),
            (.seconds(3600) + .nanoseconds(7), 3_600_000_000_007),
            (Duration(attoseconds: 1_999_999_999), 1), (Duration(attoseconds: 999_999_999), 0),
            (.seconds(Int64.max / 1_000_000_000), UInt64(Int64.max / 1_000_000_000) * 1_000_000_000),
            (.seconds(Int64.max), .max)
        ]
        for (duration, nanoseconds) in cases {
            #expect(duration.nanoseconds == nanoseconds, "\(duration)")
        }
        for negative: Duration in [
            .nanoseconds(-1), .seconds(-5), .milliseconds(-1), Duration(attoseconds: -999_999_999)
        ] {
            #expect(negative.nanoseconds == 0, "\(negative)")
        }
    }

    @Test func millisecondsAndSeconds() {
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
        #expect((Duration.seconds(2) + .microseconds(999)).milliseconds == 2000)
        #expect(Duration.milliseconds(-1500).milliseconds == -1500)
        #expect(Duration.seconds(Int64.max).milliseconds == .max)
        #expect(Duration.seconds(Int64.min).milliseconds == .min)
        #expect(Duration.seconds(2.5).seconds == 2.5)
        #expect(Duration.milliseconds(100).seconds == 0.1)
        #expect(Duration.milliseconds(-250).seconds == -0.25)
    }
}
