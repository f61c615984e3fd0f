import DequeModule
import NetCore

/// Exchanges waiting, oldest first, for an HTTP/1.1 connection (``HTTPOriginPool``) or an HTTP/2 stream
/// (``HTTP2ClientConnection``). Loop thread only.
///
/// A `Deque`: taking the first, putting one back in front and appending cost O(1), and a taken slot lets go of its
/// exchange at once. An exchange that finishes while it waits (cancelled, or failed by ``expireWaits(now:)``) stays
/// until it is passed over, and counts until then.
struct HTTPClientWaitQueue {
    private var exchanges = Deque<HTTPClientExchange>()

    /// The exchanges in the queue, including finished ones not passed over yet.
    var count: Int { exchanges.count }

    var isEmpty: Bool { exchanges.isEmpty }

    /// Adds `exchange` at the end, its wait timed from now and cancelling it failing it where it waits; fails it with
    /// ``HTTPClientError/poolExhausted`` instead, and returns false, when `limit` exchanges wait already.
    @discardableResult
    mutating func enqueue(_ exchange: HTTPClientExchange, limit: Int) -> Bool {
        guard exchanges.count < limit else {
            exchange.fail(.poolExhausted)
            return false
        }
        exchange.startWaiting(now: EventLoop.now())
        exchanges.append(exchange)
        exchange.onCancel = { [weak exchange] in exchange?.fail(.cancelled) }
        return true
    }

    /// Puts `exchange` back in front (it waited first and could not be served after all).
    mutating func prepend(_ exchange: HTTPClientExchange) {
        exchanges.prepend(exchange)
    }

    /// Takes out the first unfinished exchange, dropping the finished ones before it; nil when none is left.
    mutating func popFirst() -> HTTPClientExchange? {
        while let exchange = exchanges.popFirst() {
            if !exchange.isFinished { return exchange }
        }
        return nil
    }

    /// Takes out the next exchange under a fair share (``HTTPClient/Configuration/maxShare``): the first unfinished one
    /// whose caller holds fewer than `limit` of what is shared (or that has no caller), wherever it stands, else the
    /// first unfinished one; nil, the queue emptied, when none is left. `held` gives what each caller holds; it is
    /// asked once, and only when an exchange with a caller is met. Each unfinished exchange passed over for its
    /// caller's share, when another was chosen, is marked and counted (`onFairShareWait`) once.
    mutating func popFirst(
        fairShare limit: Int, held: () -> [Int: Int], onFairShareWait: (() -> Void)?
    ) -> HTTPClientExchange? {
        var counts: [Int: Int]?
        var first: Int?
        var chosen: Int?
        var skipped: [HTTPClientExchange] = []
        for index in exchanges.indices {
            let exchange = exchanges[index]
            guard !exchange.isFinished else { continue }
            if first == nil { first = index }
            guard let caller = exchange.callerKey else {
                chosen = index
                break
            }
            let holders = counts ?? held()
            counts = holders
            if holders[caller] ?? 0 < limit {
                chosen = index
                break
            }
            skipped.append(exchange)
        }
        if chosen != nil {
            for exchange in skipped where !exchange.passedOverForShare {
                exchange.passedOverForShare = true
                onFairShareWait?()
            }
        }
        guard let picked = chosen ?? first else {
            exchanges.removeAll(keepingCapacity: true)
            return nil
        }
        return picked == exchanges.startIndex ? exchanges.removeFirst() : exchanges.remove(at: picked)
    }

    /// Fails the exchanges whose wait expired (see ``HTTPClientExchange/expireWait(now:)``) and drops them, with any
    /// other finished one, when any did.
    mutating func expireWaits(now: UInt64) {
        var expired = false
        for exchange in exchanges where exchange.expireWait(now: now) { expired = true }
        guard expired else { return }
        exchanges.removeAll { $0.isFinished }
    }

    /// Takes out every exchange, and returns the unfinished ones in order.
    mutating func takeAll() -> [HTTPClientExchange] {
        let waiting: [HTTPClientExchange] = exchanges.filter { !$0.isFinished }
        exchanges.removeAll()
        return waiting
    }
}
