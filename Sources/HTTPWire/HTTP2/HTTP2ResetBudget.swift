/// Counts the streams a client cancels before their responses are complete against the streams it lets complete
/// (the "rapid reset" attack, CVE-2023-44487, where every request is cancelled as soon as it is sent, so the
/// concurrent-stream limit never binds while each one may already have started work).
///
/// Once the client has cancelled ``limit`` more streams than it let complete, the budget is at its limit
/// (``isAtLimit``): the server holds each new stream back briefly before starting its handler, so a stream cancelled
/// at once starts nothing, and one more cancellation (``streamCancelled(openedAt:now:)`` returning true) earns the
/// connection a GOAWAY. So at most ``limit`` cancelled requests (by default the concurrent-stream limit's worth) can
/// have started work, while a client that cancels a full set of streams once (a browser leaving a page) and goes on
/// is only slowed down until its completions pay the cancellations back.
///
/// Only young streams count (reset less than ``prematureAge`` after they opened): a client that gives up on a stream
/// it has waited for (a long poll, a subscription, a download it no longer needs) makes the server start no more
/// work than the concurrent-stream limit allows anyway. Each completed response pays one cancellation back.
///
/// A pure state machine; times are monotonic nanoseconds.
package struct HTTP2ResetBudget: Sendable, Hashable {
    /// Cancellations beyond completions that bring the budget to its limit.
    package let limit: Int
    /// Streams older than this when reset do not count (nanoseconds).
    package let prematureAge: UInt64
    /// Young cancellations not yet paid back by completions.
    package private(set) var debt = 0

    package init(limit: Int, prematureAge: Duration) {
        self.limit = max(1, limit)
        let (seconds, attoseconds) = prematureAge.components
        self.prematureAge =
            seconds < 0
            ? 0
            : UInt64(clamping: seconds) &* 1_000_000_000 &+ UInt64(clamping: attoseconds / 1_000_000_000)
    }

    /// Whether the client has cancelled ``limit`` more young streams than it let complete: new streams are held back
    /// before their handlers start.
    package var isAtLimit: Bool { debt >= limit }

    /// The peer reset a stream opened at `openedAt` whose response was not complete, at `now`; true when that takes
    /// the budget past its limit: the connection is to be told GOAWAY(ENHANCE_YOUR_CALM).
    @discardableResult
    package mutating func streamCancelled(openedAt: UInt64, now: UInt64) -> Bool {
        if now < openedAt || now - openedAt < prematureAge { debt += 1 }
        return debt > limit
    }

    /// A stream's response was sent in full.
    package mutating func streamCompleted() {
        if debt > 0 { debt -= 1 }
    }
}
