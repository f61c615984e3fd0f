import Testing

@testable import HTTPClientCore

/// The fair share's table of who holds how many connections (``HTTPOriginShares``), without sockets: counts raised and
/// lowered through holders, a pool's cached holder reused only for its own caller and while it is in the table, and
/// callers at zero dropped once the table has grown.
@Suite struct HTTPOriginSharesTests {
    @Test func takesAndGivesCountPerCaller() {
        let shares = HTTPOriginShares(share: 0.5, capacity: 4)
        #expect(shares.limit == 2)
        let first = shares.take(1)
        let second = shares.take(1, cached: first)
        #expect(second === first)
        let other = shares.take(2, cached: first)
        #expect(other !== first)
        #expect(shares.count(of: 1) == 2)
        #expect(shares.count(of: 2) == 1)
        #expect(shares.held == [1: 2, 2: 1])
        shares.give(first)
        shares.give(other)
        #expect(shares.count(of: 1) == 1)
        #expect(shares.count(of: 2) == 0)
        // A caller holding nothing is left out of the snapshot the wait queue reads.
        #expect(shares.held == [1: 1])
        // Found again by its caller without a cached holder.
        #expect(shares.take(2) === other)
        #expect(shares.count(of: 2) == 1)
    }

    @Test func callersAtZeroAreDroppedAndTheirCachedHolderIsNotUsed() {
        let shares = HTTPOriginShares(share: 0.5, capacity: 4)
        let idle = shares.take(1)
        shares.give(idle)
        let busy = shares.take(2)
        // Enough other callers, each holding one connection then giving it back, to make the table prune itself.
        for caller in 100..<300 {
            shares.give(shares.take(caller))
        }
        #expect(shares.held == [2: 1])
        // Caller 1's holder was dropped at zero: a pool that still has it cached counts on a new one, which the
        // snapshot sees.
        let again = shares.take(1, cached: idle)
        #expect(again !== idle)
        #expect(shares.count(of: 1) == 1)
        // The busy caller's holder stayed: its connection is still counted, and given back to it.
        #expect(shares.take(2, cached: busy) === busy)
        #expect(shares.count(of: 2) == 2)
        shares.give(busy)
        shares.give(busy)
        #expect(shares.held == [1: 1])
    }
}
