import Testing

@testable import Gateway

@Suite struct RateLimiterTests {
    static let second: UInt64 = 1_000_000_000

    @Test func aBurstThenOneCallPerInterval() {
        // 2 per second with a burst of 3: three at once, then one every 500 ms.
        let limiter = RateLimiter(requests: 2, per: .seconds(1), burst: 3)
        let start = 10 * Self.second
        for _ in 0..<3 { #expect(limiter.admit("a", now: start) == .allowed) }
        #expect(limiter.admit("a", now: start) == .refused(retryAfter: .milliseconds(500)))
        #expect(limiter.admit("a", now: start + Self.second / 4) == .refused(retryAfter: .milliseconds(250)))
        #expect(limiter.admit("a", now: start + Self.second / 2) == .allowed)
        #expect(limiter.admit("a", now: start + Self.second / 2) == .refused(retryAfter: .milliseconds(500)))
        // Idle long enough, the whole burst is back, and no more than it.
        let later = start + 10 * Self.second
        for _ in 0..<3 { #expect(limiter.admit("a", now: later) == .allowed) }
        #expect(limiter.admit("a", now: later) != .allowed)
    }

    @Test func aBurstOfOneIsAStrictPace() {
        let limiter = RateLimiter(requests: 10, per: .seconds(1), burst: 1)
        #expect(limiter.admit("a", now: Self.second) == .allowed)
        #expect(limiter.admit("a", now: Self.second + 1) == .refused(retryAfter: .nanoseconds(99_999_999)))
        #expect(limiter.admit("a", now: Self.second + Self.second / 10) == .allowed)
    }

    @Test func callersHaveTheirOwnBudgets() {
        let limiter = RateLimiter(requests: 1, per: .seconds(60), burst: 1)
        #expect(limiter.admit("billing", now: Self.second) == .allowed)
        #expect(limiter.admit("billing", now: Self.second) != .allowed)
        #expect(limiter.admit("web", now: Self.second) == .allowed)
        #expect(limiter.admit("127.0.0.1", now: Self.second) == .allowed)
    }

    @Test func callersBeyondTheTableShareOneBudgetUntilIdleOnesAreDropped() {
        let limiter = RateLimiter(requests: 1, per: .seconds(1), burst: 1, maxCallers: 2)
        let now = 5 * Self.second
        #expect(limiter.admit("a", now: now) == .allowed)
        #expect(limiter.admit("b", now: now) == .allowed)
        // The table is full of callers still within their interval: c and d share the overflow budget.
        #expect(limiter.admit("c", now: now) == .allowed)
        #expect(limiter.admit("d", now: now) == .refused(retryAfter: .seconds(1)))
        #expect(limiter.trackedCallers == 3)
        // A second later a, b and the overflow budget are whole again: they are dropped, and e gets a place of its own.
        #expect(limiter.admit("e", now: now + 2 * Self.second) == .allowed)
        #expect(limiter.trackedCallers == 1)
        #expect(limiter.admit("a", now: now + 2 * Self.second) == .allowed)
    }

    @Test func aRouteWideLimitIsOneBudget() {
        let limiter = RateLimiter(requests: 3, per: .seconds(3), burst: 2)
        #expect(limiter.admit("", now: Self.second) == .allowed)
        #expect(limiter.admit("", now: Self.second) == .allowed)
        #expect(limiter.admit("", now: Self.second) == .refused(retryAfter: .seconds(1)))
    }
}
