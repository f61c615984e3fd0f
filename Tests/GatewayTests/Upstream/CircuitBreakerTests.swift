import Testing

@testable import Gateway

/// The circuit's state machine, driven with explicit times (nanoseconds).
@Suite struct CircuitBreakerTests {
    static let second: UInt64 = 1_000_000_000

    @Test func opensAfterTheConfiguredFailuresInARowOnly() {
        let breaker = CircuitBreaker(failureThreshold: 3, openFor: .seconds(10))
        #expect(breaker.admit(now: 0) == .allowed(trial: false))
        #expect(breaker.record(.failure, trial: false, now: 0) == .none)
        #expect(breaker.record(.failure, trial: false, now: 0) == .none)
        #expect(breaker.record(.success, trial: false, now: 0) == .none, "a success starts the count again")
        #expect(breaker.record(.failure, trial: false, now: 0) == .none)
        #expect(breaker.record(.neutral, trial: false, now: 0) == .none, "a neutral call neither counts nor resets")
        #expect(breaker.record(.failure, trial: false, now: 0) == .none)
        #expect(!breaker.isOpen)
        #expect(breaker.record(.failure, trial: false, now: 1 * Self.second) == .opened)
        #expect(breaker.isOpen)
        #expect(breaker.admit(now: 4 * Self.second) == .refused(retryAfter: .seconds(7)))
    }

    @Test func oneTrialCallAfterTheOpenTimeDecides() {
        let breaker = CircuitBreaker(failureThreshold: 1, openFor: .seconds(10))
        #expect(breaker.record(.failure, trial: false, now: 0) == .opened)
        #expect(breaker.admit(now: 10 * Self.second) == .allowed(trial: true))
        #expect(breaker.admit(now: 10 * Self.second) == .refused(retryAfter: .seconds(10)), "one trial at a time")
        #expect(breaker.record(.failure, trial: true, now: 11 * Self.second) == .reopened)
        #expect(
            breaker.admit(now: 20 * Self.second) == .refused(retryAfter: .seconds(1)), "open again from the failure")
        #expect(breaker.admit(now: 21 * Self.second) == .allowed(trial: true))
        #expect(breaker.record(.success, trial: true, now: 21 * Self.second) == .closed)
        #expect(!breaker.isOpen)
        #expect(breaker.admit(now: 21 * Self.second) == .allowed(trial: false))
    }

    @Test func aTrialThatTellsNothingLetsTheNextCallTry() {
        let breaker = CircuitBreaker(failureThreshold: 1, openFor: .seconds(10))
        _ = breaker.record(.failure, trial: false, now: 0)
        #expect(breaker.admit(now: 10 * Self.second) == .allowed(trial: true))
        #expect(breaker.record(.neutral, trial: true, now: 12 * Self.second) == .none)
        #expect(breaker.admit(now: 12 * Self.second) == .allowed(trial: true))
    }

    @Test func callsAllowedBeforeTheCircuitOpenedDoNotChangeIt() {
        let breaker = CircuitBreaker(failureThreshold: 2, openFor: .seconds(10))
        _ = breaker.record(.failure, trial: false, now: 0)
        #expect(breaker.record(.failure, trial: false, now: 0) == .opened)
        // Calls sent while it was closed end now: neither a late success nor a late failure moves it.
        #expect(breaker.record(.success, trial: false, now: Self.second) == .none)
        #expect(breaker.record(.failure, trial: false, now: Self.second) == .none)
        #expect(breaker.admit(now: 5 * Self.second) == .refused(retryAfter: .seconds(5)))
    }
}
