import Testing

@testable import HTTPServerCore

/// The minimum-rate meter the connections' sweeps use (``HTTPServerLimits/minSendRate``), without sockets.
@Suite struct MinimumRateTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aSilentTransferFallsBehindAfterTheWindow() {
        var meter = MinimumRate()
        var cut = false
        for tick in 1...9 {
            cut = meter.check(total: 0, waiting: true, elapsed: Self.second, rate: 1024, window: .seconds(10))
            #expect(!cut, "tick \(tick)")
        }
        #expect(!run { meter.check(total: 0, waiting: true, elapsed: Self.second, rate: 1024, window: .seconds(10)) })
        #expect(
            run { meter.check(total: 0, waiting: true, elapsed: Self.second / 4, rate: 1024, window: .seconds(10)) })
    }

    @Test func aTrickleIsCutAndAPaceAtTheRateIsNot() {
        var trickle = MinimumRate()
        var steady = MinimumRate()
        var trickled = 0
        var paced = 0
        var trickleCutAt: Int?
        for tick in 1...80 {
            trickled += 2  // 2 bytes per quarter second
            paced += 256  // 1 KiB per second
            if trickle.check(
                total: trickled, waiting: true, elapsed: Self.second / 4, rate: 1024, window: .seconds(10)),
                trickleCutAt == nil
            {
                trickleCutAt = tick
            }
            #expect(
                !run {
                    steady.check(
                        total: paced, waiting: true, elapsed: Self.second / 4, rate: 1024, window: .seconds(10))
                })
        }
        #expect((40...42).contains(trickleCutAt ?? 0), "cut after about 10 s: tick \(String(describing: trickleCutAt))")
    }

    @Test func timeNotWaitingOnTheClientNeverCounts() {
        var meter = MinimumRate()
        for _ in 0..<100 {
            #expect(
                !run { meter.check(total: 0, waiting: false, elapsed: Self.second, rate: 1024, window: .seconds(2)) })
        }
        #expect(!run { meter.check(total: 0, waiting: true, elapsed: Self.second, rate: 1024, window: .seconds(2)) })
        // The client caught up (nothing queued): the shortfall is cleared.
        #expect(!run { meter.check(total: 0, waiting: false, elapsed: Self.second, rate: 1024, window: .seconds(2)) })
        #expect(meter.shortfall == 0)
        #expect(!run { meter.check(total: 0, waiting: true, elapsed: Self.second, rate: 1024, window: .seconds(2)) })
        #expect(!run { meter.check(total: 0, waiting: true, elapsed: Self.second, rate: 1024, window: .seconds(2)) })
        #expect(run { meter.check(total: 0, waiting: true, elapsed: Self.second / 2, rate: 1024, window: .seconds(2)) })
    }

    @Test func aBurstPaysOffTheShortfallButBanksNothing() {
        var meter = MinimumRate()
        #expect(
            !run { meter.check(total: 0, waiting: true, elapsed: 5 * Self.second, rate: 1000, window: .seconds(6)) })
        #expect(
            !run { meter.check(total: 1_000_000, waiting: true, elapsed: Self.second, rate: 1000, window: .seconds(6)) }
        )
        #expect(meter.shortfall == 0)
        for _ in 0..<6 {
            #expect(
                !run {
                    meter.check(total: 1_000_000, waiting: true, elapsed: Self.second, rate: 1000, window: .seconds(6))
                })
        }
        #expect(
            run { meter.check(total: 1_000_000, waiting: true, elapsed: Self.second, rate: 1000, window: .seconds(6)) })
        var off = MinimumRate()
        for _ in 0..<100 {
            #expect(!run { off.check(total: 0, waiting: true, elapsed: Self.second, rate: 0, window: .seconds(1)) })
        }
    }
}

/// Runs a mutating check outside `#expect`, which cannot call mutating members itself.
private func run(_ body: () -> Bool) -> Bool { body() }
