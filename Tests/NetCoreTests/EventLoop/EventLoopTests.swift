import Locking
import NetCore
import Testing

@Suite struct EventLoopTests {
    /// Whole nanoseconds of a duration, clamped: a negative one of any size is zero (one of less than a second has
    /// zero whole seconds and negative attoseconds), a huge one `UInt64.max`.
    @Test func durationNanosecondsClampNegativeAndHugeDurations() {
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
        #expect(Duration.nanoseconds(7).nanoseconds == 7)
        #expect(Duration.zero.nanoseconds == 0)
        #expect(Duration.milliseconds(-300).nanoseconds == 0)
        #expect(Duration.nanoseconds(-1).nanoseconds == 0)
        #expect(Duration.milliseconds(-1500).nanoseconds == 0)
        #expect(Duration.seconds(Int64.max).nanoseconds == UInt64.max)
        let now = ContinuousClock.now
        #expect(now.duration(to: now - .milliseconds(250)).nanoseconds == 0)
    }

    @Test func executeRunsOnTheLoopThread() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let onLoop = await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: loop.inEventLoop) }
        }
        #expect(onLoop)
        #expect(!loop.inEventLoop)
    }

    @Test func roundTimeIsTheTimeTheLoopLastWokeAndAdvancesWithEachWake() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        func sample() async -> (round: UInt64, now: UInt64) {
            await withCheckedContinuation { continuation in
                loop.execute { continuation.resume(returning: (loop.roundTime, EventLoop.now())) }
            }
        }
        let first = await sample()
        #expect(first.round <= first.now)
        try await Task.sleep(for: .milliseconds(20))
        let second = await sample()
        #expect(second.round <= second.now)
        #expect(second.round >= first.now + 20_000_000)
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesDoNot() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let order = Locked<[Int]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                loop.schedule(after: .milliseconds(30)) {
                    order.withLock { $0.append(3) }
                    continuation.resume()
                }
                loop.schedule(after: .milliseconds(10)) { order.withLock { $0.append(1) } }
                let cancelled = loop.schedule(after: .milliseconds(15)) { order.withLock { $0.append(99) } }
                loop.schedule(after: .milliseconds(20)) { order.withLock { $0.append(2) } }
                cancelled.cancel()
            }
        }
        #expect(order.withLock { $0 } == [1, 2, 3])
    }

    @Test func tasksPreferringTheLoopStayOnIt() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let results = await Task(executorPreference: loop) { () -> [Bool] in
            var seen = [loop.inEventLoop]
            try? await Task.sleep(for: .milliseconds(5))
            seen.append(loop.inEventLoop)
            await Task.yield()
            seen.append(loop.inEventLoop)
            return seen
        }.value
        #expect(results == [true, true, true])
    }

    @Test func groupHandsOutLoopsRoundRobin() throws {
        let group = try EventLoopGroup(threads: 2)
        defer { group.shutdown() }
        let first = group.next()
        let second = group.next()
        let third = group.next()
        #expect(first !== second)
        #expect(first === third)
    }
}
