import Locking
import NetCore
import Synchronization

/// The client-wide cap on HTTP/1.1 connections to one origin (``HTTPClient/Configuration/maxConnectionsPerOriginTotal``),
/// shared by that origin's pools on every loop.
///
/// A pool takes a place before it opens a connection and gives it back when the connection closes. A pool that finds
/// no place left keeps its requests waiting and is marked hungry: every other pool then closes one idle connection,
/// and a pool finishing an exchange closes the connection instead of keeping it idle while a pool is hungry; each place
/// given back wakes the hungry pools on their loops. Only connection opens and closes touch the shared state.
final class HTTPOriginBudget: Sendable {
    private struct State {
        var open = 0
        var pools: [UncheckedSendable<HTTPOriginPool>] = []
        var hungry: [UncheckedSendable<HTTPOriginPool>] = []
    }

    /// Most connections open at once across the pools.
    let limit: Int
    private let state = Locked(State())
    /// `state.hungry.count`, readable without the lock on every finished exchange.
    private let hungryCount = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Adds a loop's pool for the origin (once, when the pool is made).
    func register(_ pool: HTTPOriginPool) {
        state.withLock { $0.pools.append(UncheckedSendable(pool)) }
    }

    /// Takes a place for a new connection of `pool`; false when none is left, and `pool` is marked hungry (the other
    /// pools are asked to close an idle connection).
    func acquire(for pool: HTTPOriginPool) -> Bool {
        let others = state.withLock { state -> [UncheckedSendable<HTTPOriginPool>]? in
            if state.open < limit {
                state.open += 1
                return nil
            }
            if !state.hungry.contains(where: { $0.value === pool }) {
                state.hungry.append(UncheckedSendable(pool))
                hungryCount.store(state.hungry.count, ordering: .relaxed)
            }
            return state.pools.filter { $0.value !== pool }
        }
        guard let others else { return true }
        for other in others {
            let target = other
            other.value.loop.execute { target.value.giveUpIdleConnection() }
        }
        return false
    }

    /// Gives back a place (a connection closed, or became HTTP/2); the hungry pools try again on their loops.
    func release() {
        let hungry = state.withLock { state -> [UncheckedSendable<HTTPOriginPool>] in
            state.open = max(0, state.open - 1)
            defer {
                state.hungry.removeAll()
                hungryCount.store(0, ordering: .relaxed)
            }
            return state.hungry
        }
        for pool in hungry {
            let target = pool
            pool.value.loop.execute { target.value.budgetFreed() }
        }
    }

    /// Whether some pool waits for a place: a connection that finished its exchange is then closed, not kept idle.
    var hasHungryPools: Bool { hungryCount.load(ordering: .relaxed) > 0 }
}

/// The budgets of one client, one per origin, made when the origin's first pool is.
final class HTTPOriginBudgets: Sendable {
    private let limit: Int?
    private let budgets = Locked<[HTTPOrigin: HTTPOriginBudget]>([:])

    init(limit: Int?) {
        self.limit = limit
    }

    /// The budget for `origin`, or nil when the client has no client-wide cap.
    func budget(for origin: HTTPOrigin) -> HTTPOriginBudget? {
        guard let limit else { return nil }
        return budgets.withLock { budgets in
            if let budget = budgets[origin] { return budget }
            let budget = HTTPOriginBudget(limit: limit)
            budgets[origin] = budget
            return budget
        }
    }
}
