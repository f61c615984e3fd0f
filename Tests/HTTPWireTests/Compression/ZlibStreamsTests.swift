import CZlib
import Testing

@testable import HTTPWire

/// Decodes with zlib directly (not through `Inflater`), to show the output is standard.
private func zlibInflate(_ data: [UInt8], windowBits: Int32) -> [UInt8]? {
    var stream = z_stream()
    guard cgw_inflateInit2(&stream, windowBits) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var out: [UInt8] = []
    var input = data
    var buffer = [UInt8](repeating: 0, count: 65536)
    var rc: Int32 = Z_OK
    input.withUnsafeMutableBufferPointer { inBuf in
        stream.next_in = inBuf.baseAddress
        stream.avail_in = UInt32(inBuf.count)
        repeat {
            buffer.withUnsafeMutableBufferPointer { outBuf in
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                rc = inflate(&stream, Z_NO_FLUSH)
                out.append(contentsOf: outBuf[0..<(outBuf.count - Int(stream.avail_out))])
            }
        } while rc == Z_OK
    }
    return rc == Z_STREAM_END ? out : nil
}

private func sample(_ count: Int) -> [UInt8] {
    var state: UInt32 = 12345
    return (0..<count).map { i in
        state = state &* 1_103_515_245 &+ 12345
        // Compressible but not trivial: words from a small alphabet.
        return i % 7 == 0 ? 32 : UInt8(97 + (state >> 16) % 6)
    }
}

@Suite struct ZlibStreamsTests {
    @Test(arguments: [0, 1, 100, 16_384, 100_000, 1_000_003])
    func gzipRoundTripInChunks(size: Int) throws {
        let input = sample(size)
        for chunkSize in [1, 7, 4096, 1 << 20] where chunkSize <= max(size, 1) * 2 {
            if chunkSize == 1 && size > 100_000 { continue }
            let deflater = try Deflater(coding: .gzip)
            var compressed: [UInt8] = []
            var index = 0
            while index < input.count {
                let end = min(index + chunkSize, input.count)
                compressed += try deflater.compress(input[index..<end])
                index = end
            }
            compressed += try deflater.finish()
            #expect(compressed.prefix(2) == [0x1f, 0x8b])
            #expect(zlibInflate(compressed, windowBits: 15 + 16) == input)

            let inflater = try Inflater()
            var output: [UInt8] = []
            index = 0
            while index < compressed.count {
                let end = min(index + chunkSize, compressed.count)
                output += try inflater.decompress(compressed[index..<end])
                index = end
            }
            try inflater.finish()
            #expect(output == input)
        }
    }

    @Test(arguments: [1, 6, 9])
    func deflateIsZlibFormat(level: Int32) throws {
        let input = sample(50_000)
        let compressed = try Deflater.compress(input, coding: .deflate, level: level)
        #expect(zlibInflate(compressed, windowBits: 15) == input)
        #expect(try Inflater.decompress(compressed) == input)
    }

    @Test func rawDeflateFallback() throws {
        let input = sample(10_000)
        // Produce raw deflate (no zlib header) with zlib itself.
        var stream = z_stream()
        #expect(cgw_deflateInit2(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK)
        var raw = [UInt8](repeating: 0, count: 20_000)
        var source = input
        let produced = source.withUnsafeMutableBufferPointer { inBuf in
            raw.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = UInt32(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                _ = deflate(&stream, Z_FINISH)
                return outBuf.count - Int(stream.avail_out)
            }
        }
        deflateEnd(&stream)
        #expect(try Inflater.decompress(raw.prefix(produced)) == input)
    }

    @Test func flushMakesPrefixDecodable() throws {
        let deflater = try Deflater(coding: .gzip)
        let first = try deflater.flush(Array("event: one\n\n".utf8))
        let inflater = try Inflater()
        #expect(try inflater.decompress(first) == Array("event: one\n\n".utf8))
        let rest = try deflater.compress(Array("more".utf8)) + deflater.finish()
        #expect(try inflater.decompress(rest) == Array("more".utf8))
        try inflater.finish()
        #expect(throws: CompressionError.streamFinished) { try deflater.compress([1]) }
    }

    @Test func concatenatedGzipMembers() throws {
        let a = try Deflater.compress(Array("hello ".utf8), coding: .gzip)
        let b = try Deflater.compress(Array("world".utf8), coding: .gzip)
        #expect(try Inflater.decompress(a + b) == Array("hello world".utf8))
    }

    @Test func bombHitsOutputCapWithBoundedMemory() throws {
        // 100 MiB of zeros, compressed in 1 MiB steps (about 100 KiB of gzip).
        let deflater = try Deflater(coding: .gzip, level: 9)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var bomb: [UInt8] = []
        for _ in 0..<100 { bomb += try deflater.compress(zeros) }
        bomb += try deflater.finish()
        #expect(bomb.count < 200_000)

        // Output cap: 8 MiB, ratio check disabled.
        let capped = try Inflater(maxOutputBytes: 8 << 20, maxRatio: Int.max)
        var seen = 0
        #expect(throws: CompressionError.limitExceeded) {
            var index = 0
            while index < bomb.count {
                let end = min(index + 4096, bomb.count)
                seen += try capped.decompress(bomb[index..<end]).count
                index = end
            }
        }
        #expect(seen <= 8 << 20)
        #expect(capped.totalOut <= (8 << 20) + 16_384)

        // Ratio cap: default 1000:1 after 1 MiB, even with a huge output cap, in one call.
        let ratio = try Inflater(maxOutputBytes: Int.max)
        #expect(throws: CompressionError.limitExceeded) { _ = try ratio.decompress(bomb) }
        #expect(ratio.totalOut < 4 << 20)
        #expect(throws: CompressionError.streamFinished) { _ = try ratio.decompress([0]) }
    }

    @Test func corruptInputThrows() throws {
        var good = try Deflater.compress(sample(10_000), coding: .gzip)
        good[good.count / 2] ^= 0xff
        good[good.count / 2 + 1] ^= 0x55
        #expect(throws: CompressionError.self) { _ = try Inflater.decompress(good) }

        // A corrupted trailer (CRC) is detected.
        var crc = try Deflater.compress(sample(1000), coding: .gzip)
        crc[crc.count - 6] ^= 1
        #expect(throws: CompressionError.corruptInput) { _ = try Inflater.decompress(crc) }

        #expect(throws: CompressionError.self) { _ = try Inflater.decompress([UInt8](repeating: 0xff, count: 100)) }
        #expect(throws: CompressionError.self) { _ = try Inflater.decompress([0x1f, 0x8b, 8, 0xff, 0xff, 0xff]) }
        // Truncated.
        let whole = try Deflater.compress(sample(1000), coding: .deflate)
        #expect(throws: CompressionError.truncatedInput) { _ = try Inflater.decompress(whole.dropLast(10)) }
        #expect(throws: CompressionError.truncatedInput) { _ = try Inflater.decompress([0x1f]) }
        #expect(throws: CompressionError.truncatedInput) { _ = try Inflater.decompress([UInt8]()) }
        // Garbage after a zlib stream.
        #expect(throws: CompressionError.corruptInput) { _ = try Inflater.decompress(whole + [1, 2, 3]) }
    }

    @Test func randomInputNeverTraps() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for round in 0..<300 {
            var bytes: [UInt8] = [0x1f, 0x8b, 0x78, 0x9c][round % 4 < 2 ? 0..<2 : 2..<4].map { $0 }
            for _ in 0..<(round % 200) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(UInt8(truncatingIfNeeded: state >> 33))
            }
            let inflater = try Inflater(maxOutputBytes: 1 << 20)
            _ = try? inflater.decompress(bytes)
        }
    }

    @Test func invalidConfigurationThrows() {
        #expect(throws: CompressionError.self) { _ = try Deflater(coding: .identity) }
        #expect(throws: CompressionError.self) { _ = try Deflater(coding: .gzip, level: 12) }
    }
}
