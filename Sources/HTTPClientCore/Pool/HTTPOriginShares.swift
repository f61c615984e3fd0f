import Locking

/// Who holds how many of an origin's HTTP/1.1 connections now, across the client's loops, for the fair share
/// (``HTTPClient/Configuration/maxShare``): while the pool is full and requests wait, a request whose caller (see
/// ``HTTPClientRequest/callerKey``) already holds ``limit`` connections is passed over for the first waiting request
/// of any other caller, so that one caller cannot keep every connection by asking faster than the others. A caller
/// alone, or a pool with room, is never held back.
///
/// A connection counts for its caller from the moment the pool gives it the request until the response has been read
/// (or the connection closed). One lock, taken twice per request with a caller.
final class HTTPOriginShares: Sendable {
    /// The most connections one caller holds before its further requests wait behind other callers'.
    let limit: Int
    private let heldCounts = Locked<[Int: Int]>([:])

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

    /// `caller` now holds one more connection.
    func take(_ caller: Int) {
        heldCounts.withLock { $0[caller, default: 0] += 1 }
    }

    /// `caller` gave one back.
    func give(_ caller: Int) {
        heldCounts.withLock { held in
            guard let count = held[caller] else { return }
            if count <= 1 { held.removeValue(forKey: caller) } else { held[caller] = count - 1 }
        }
    }

    /// How many connections `caller` holds now.
    func count(of caller: Int) -> Int {
        heldCounts.withLock { $0[caller] ?? 0 }
    }

    /// How many connections each caller holds now (a copy: the pool picks its next waiter from it, see
    /// ``HTTPClientWaitQueue/popFirst(fairShare:held:onFairShareWait:)``).
    var held: [Int: Int] {
        heldCounts.withLock { $0 }
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
