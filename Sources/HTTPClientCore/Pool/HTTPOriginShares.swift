import Locking
import Synchronization

/// Who holds how many of an origin's HTTP/1.1 connections now, across the client's loops, for the fair share
/// (``HTTPClient/Configuration/maxShare``): while the pool is full and requests wait, a request whose caller (see
/// ``HTTPClientRequest/callerKey``) already holds ``limit`` connections is passed over for the first waiting request
/// of any other caller, so that one caller cannot keep every connection by asking faster than the others. A caller
/// alone, or a pool with room, is never held back.
///
/// A connection counts for its caller from the moment the pool gives it the request until the response has been read
/// (or the connection closed). Each caller has a ``Holder`` whose count changes atomically: giving a connection back
/// takes no lock and no lookup, and taking one takes the lock once, with no lookup either when the pool still has the
/// caller's holder from its previous request (a proxy's usual run of requests from one caller). A caller's holder
/// stays in the table at zero, so that its next request finds it; holders at zero are dropped once the table has
/// doubled since it was last pruned.
final class HTTPOriginShares: Sendable {
    /// One caller's count of the connections it holds.
    final class Holder: Sendable {
        let caller: Int
        /// Connections the caller holds now: raised under the table's lock, lowered without it.
        fileprivate let held = Atomic<Int>(0)
        /// Set, under the table's lock, when the holder was dropped at zero: a pool's cached holder is then not used.
        fileprivate let isDropped = Atomic<Bool>(false)

        fileprivate init(caller: Int) { self.caller = caller }
    }

    private struct Table {
        var holders: [Int: Holder] = [:]
        /// The table's size past which holders at zero are dropped.
        var pruneAt = HTTPOriginShares.minimumPruneSize
    }

    private static let minimumPruneSize = 64

    /// The most connections one caller holds before its further requests wait behind other callers'.
    let limit: Int
    private let table = Locked<Table>(Table())

    /// - Parameters:
    ///   - share: the fraction of `capacity` (0 < share < 1) one caller may hold while others wait.
    ///   - capacity: the origin's connection cap.
    init(share: Double, capacity: Int) {
        limit = Self.limit(share: share, capacity: capacity)
    }

    /// `share` of `capacity`, rounded down, and at least one.
    static func limit(share: Double, capacity: Int) -> Int {
        max(1, Int((share * Double(max(1, capacity))).rounded(.down)))
    }

    /// `caller` now holds one more connection; returns its holder, to give the connection back with. `cached`, a
    /// holder taken before, spares the lookup when it is `caller`'s and still in the table.
    @discardableResult
    func take(_ caller: Int, cached: Holder? = nil) -> Holder {
        table.withLock { table in
            let holder: Holder
            if let cached, cached.caller == caller, !cached.isDropped.load(ordering: .relaxed) {
                holder = cached
            } else if let known = table.holders[caller] {
                holder = known
            } else {
                // Pruned before the new holder is in (at zero itself, it would be dropped).
                if table.holders.count >= table.pruneAt { Self.prune(&table) }
                holder = Holder(caller: caller)
                table.holders[caller] = holder
            }
            holder.held.wrappingAdd(1, ordering: .relaxed)
            return holder
        }
    }

    /// The holder's caller gave one connection back.
    func give(_ holder: Holder) {
        holder.held.wrappingSubtract(1, ordering: .relaxed)
    }

    /// How many connections `caller` holds now.
    func count(of caller: Int) -> Int {
        table.withLock { $0.holders[caller]?.held.load(ordering: .relaxed) ?? 0 }
    }

    /// How many connections each caller holds now (a copy, callers holding none left out: the pool picks its next
    /// waiter from it, see ``HTTPClientWaitQueue/popFirst(fairShare:held:onFairShareWait:)``).
    var held: [Int: Int] {
        table.withLock { table in
            var counts: [Int: Int] = [:]
            for (caller, holder) in table.holders {
                let count = holder.held.load(ordering: .relaxed)
                if count > 0 { counts[caller] = count }
            }
            return counts
        }
    }

    /// Drops the holders at zero (none of their caller's connections can be given back to them: a count is raised
    /// only under the lock held here, and lowered only by a connection the holder counted), and lets the table
    /// double before the next pruning.
    private static func prune(_ table: inout Table) {
        table.holders = table.holders.filter { _, holder in
            guard holder.held.load(ordering: .relaxed) == 0 else { return true }
            holder.isDropped.store(true, ordering: .relaxed)
            return false
        }
        table.pruneAt = max(minimumPruneSize, table.holders.count * 2)
    }
}

/// The fair-share tables of one client, one per origin, made when the origin's first pool is (none without
/// ``HTTPClient/Configuration/maxShare``).
final class HTTPOriginShareTables: Sendable {
    private let share: Double?
    private let capacity: Int
    private let tables = Locked<[HTTPOrigin: HTTPOriginShares]>([:])

    init(share: Double?, capacity: Int) {
        self.share = share.flatMap { $0 > 0 && $0 < 1 ? $0 : nil }
        self.capacity = capacity
    }

    /// The table for `origin`, or nil when the client has no fair share.
    func table(for origin: HTTPOrigin) -> HTTPOriginShares? {
        guard let share else { return nil }
        return tables.withLock { tables in
            if let table = tables[origin] { return table }
            let table = HTTPOriginShares(share: share, capacity: capacity)
            tables[origin] = table
            return table
        }
    }
}
