import Testing

@testable import HTTPWire

/// ``HTTP2StreamKey``: a dictionary keyed by it finds, replaces and removes streams as one keyed by the id would, and
/// its hash spreads a client's odd ids over a table's low bits.
@Suite struct HTTP2StreamKeyTests {
    @Test func aTableKeyedByStreamIDsBehavesAsOneKeyedByInts() {
        var table: [HTTP2StreamKey: Int32] = [:]
        var reference: [Int32: Int32] = [:]
        for id in stride(from: Int32(1), through: 401, by: 2) {
            table[HTTP2StreamKey(id)] = id * 10
            reference[id] = id * 10
            if id % 3 == 0 {
                table.removeValue(forKey: HTTP2StreamKey(id - 2))
                reference.removeValue(forKey: id - 2)
            }
        }
        table[HTTP2StreamKey(401)] = 7
        reference[401] = 7
        #expect(table.count == reference.count)
        for (id, value) in reference { #expect(table[HTTP2StreamKey(id)] == value) }
        #expect(table[HTTP2StreamKey(2)] == nil)
        #expect(table[HTTP2StreamKey(Int32.max)] == nil)
    }

    @Test func oddIDsFillEveryLowBucket() {
        // 128 consecutive client ids (odd) over a table of 128 buckets: the low seven bits of their hashes take most
        // values, where the ids' own low bits would take half of them.
        let buckets = Set(
            stride(from: Int32(1), to: 257, by: 2).map { HTTP2StreamKey($0)._rawHashValue(seed: 0x5EED) & 127 })
        #expect(buckets.count > 64)
    }
}
