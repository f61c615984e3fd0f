import Locking
import NetCore

/// An upstream's circuit (`upstreams.X.circuit_breaker`): after `failures` calls in a row have failed, calls are
/// refused at once for `openFor`; then one trial call is let through, whose outcome closes the circuit again or keeps
/// it open for another `openFor`. Shared by every event loop; one lock per call, only for upstreams that configure it.
///
/// Times are monotonic nanoseconds (`EventLoop.now()`), passed in so the state machine holds no clock.
final class CircuitBreaker: Sendable {
    /// Whether a call may go to the upstream.
    enum Admission: Equatable {
        /// Send it; `trial` when it is the one call that decides whether an open circuit closes.
        case allowed(trial: Bool)
        /// Refused without contacting the upstream; the circuit is open for about `retryAfter` more.
        case refused(retryAfter: Duration)
    }

    /// How a call that was allowed ended, as far as the upstream's health goes.
    enum Outcome {
        /// The upstream answered (any status but 502, 503 or 504).
        case success
        /// No answer (connect failure, timeout, connection cut) or 502, 503 or 504.
        case failure
        /// Says nothing about the upstream (the client left, the gateway's own pool was full).
        case neutral
    }

    /// A change of state worth logging and exporting.
    enum Transition: Equatable {
        case none
        /// `failures` calls in a row failed.
        case opened
        /// A trial call failed.
        case reopened
        /// A trial call succeeded.
        case closed
    }

    private enum State {
        case closed(failuresInARow: Int)
        case open(until: UInt64)
        /// A trial call is under way; others are refused until it ends.
        case trial
    }

    let failureThreshold: Int
    let openFor: Duration
    private let state = Locked(State.closed(failuresInARow: 0))

    init(failureThreshold: Int, openFor: Duration) {
        self.failureThreshold = max(1, failureThreshold)
        self.openFor = openFor
    }

    /// Whether calls are being refused (or only the trial call is let through) now.
    var isOpen: Bool {
        state.withLock { state in
            if case .closed = state { return false }
            return true
        }
    }

    /// Whether a call may be sent now.
    func admit(now: UInt64) -> Admission {
        state.withLock { state in
            switch state {
            case .closed:
                return .allowed(trial: false)
            case .open(let until):
                if now >= until {
                    state = .trial
                    return .allowed(trial: true)
                }
                return .refused(retryAfter: .nanoseconds(Int64(clamping: until - now)))
            case .trial:
                return .refused(retryAfter: openFor)
            }
        }
    }

    /// Records how an allowed call ended; `trial` as ``admit(now:)`` said.
    func record(_ outcome: Outcome, trial: Bool, now: UInt64) -> Transition {
        state.withLock { state in
            if trial {
                switch outcome {
                case .success:
                    state = .closed(failuresInARow: 0)
                    return .closed
                case .failure:
                    state = .open(until: now &+ openFor.nanoseconds)
                    return .reopened
                case .neutral:
                    // The trial told nothing: the next call tries again.
                    state = .open(until: now)
                    return .none
                }
            }
            guard case .closed(let failures) = state else { return .none }
            switch outcome {
            case .success:
                if failures != 0 { state = .closed(failuresInARow: 0) }
            case .failure:
                if failures + 1 >= failureThreshold {
                    state = .open(until: now &+ openFor.nanoseconds)
                    return .opened
                }
                state = .closed(failuresInARow: failures + 1)
            case .neutral:
                break
            }
            return .none
        }
    }
}
