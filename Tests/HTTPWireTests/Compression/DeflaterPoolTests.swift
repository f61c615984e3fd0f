import Testing

@testable import HTTPWire

@Suite struct DeflaterPoolTests {
    static func body(_ seed: Int) -> [UInt8] {
        Array((0..<3000).map { "{\"id\":\($0 * seed),\"ok\":true}," }.joined().utf8)
    }

    @Test(arguments: [ContentCoding.gzip, .deflate])
    func pooledStreamsProduceIndependentBodies(_ coding: ContentCoding) throws {
        let pool = DeflaterPool(coding: coding, level: 1, capacity: 2)
        for seed in 1...5 {
            let input = Self.body(seed)
            let compressed = try pool.compress(input)
            #expect(compressed.count < input.count / 3)
            #expect(try Inflater.decompress(compressed) == input, "a reused stream carries nothing over")
            #expect(
                compressed == (try Deflater.compress(input, coding: coding, level: 1)), "same bytes as a fresh stream")
        }
        #expect(try Inflater.decompress(try pool.compress([])) == [])
    }

    @Test func compressWholeFinishesAndResetReopens() throws {
        let deflater = try Deflater(coding: .gzip, level: 1)
        let first = try deflater.compressWhole(Self.body(2))
        #expect(throws: CompressionError.streamFinished) { _ = try deflater.compressWhole(Self.body(2)) }
        try deflater.reset()
        #expect(try deflater.compressWhole(Self.body(2)) == first)
    }
}
