import Locking
import NetCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A byte stream lets go of what its consumer has taken.
@Suite struct ByteStreamTests {
    /// A backlog that never runs dry (the producer adds a chunk for every one taken, as a relay between two fast
    /// connections does) must not keep the chunks already taken: 256 MiB go through, a chunk or two buffered at a
    /// time. The stream used to hold every chunk it carried until its backlog emptied.
    @Test func chunksTakenFromABacklogThatNeverEmptiesAreReleased() async throws {
        let stream = ByteStream()
        let chunkBytes = 64 * 1024
        let before = ProcessMemory.resident(getpid())
        var peak = before
        _ = stream.yield([UInt8](repeating: 1, count: chunkBytes))
        var taken = 0
        for round in 0..<4096 {
            _ = stream.yield([UInt8](repeating: UInt8(truncatingIfNeeded: round), count: chunkBytes))
            taken += try await stream.next()?.count ?? 0
            if round % 256 == 0 { peak = max(peak, ProcessMemory.resident(getpid())) }
        }
        #expect(taken == 4096 * chunkBytes)
        #expect(
            peak - before < 64 << 20,
            "RSS grew \((peak - before) >> 20) MiB while 256 MiB went through a two-chunk backlog")
    }

    @Test func chunksArriveInOrderAcrossCompaction() async throws {
        let stream = ByteStream(highWaterMark: .max)
        var expected: [UInt8] = []
        var received: [UInt8] = []
        for round in 0..<1000 {
            let chunk = [UInt8(truncatingIfNeeded: round), UInt8(truncatingIfNeeded: round >> 8)]
            expected += chunk
            _ = stream.yield(chunk)
            // Take two chunks every three rounds: the backlog grows and the taken prefix is compacted away.
            if round % 3 != 0, let next = try await stream.next() { received += next }
        }
        stream.finish()
        while let next = try await stream.next() { received += next }
        #expect(received == expected)
    }

    @Test func producerIsPausedAboveHighWaterAndResumedBelowLowWater() async throws {
        let resumed = Locked(0)
        let stream = ByteStream(highWaterMark: 10, lowWaterMark: 4) { resumed.withLock { $0 += 1 } }
        #expect(stream.yield([UInt8](repeating: 1, count: 6)))
        #expect(!stream.yield([UInt8](repeating: 2, count: 6)), "12 bytes buffered is above the high-water mark")
        #expect(try await stream.next()?.count == 6)
        #expect(resumed.withLock { $0 } == 0, "6 bytes left is above the low-water mark")
        #expect(try await stream.next()?.first == 2)
        #expect(resumed.withLock { $0 } == 1)
        stream.finish()
        #expect(try await stream.next() == nil)
    }

    @Test func waitingConsumerGetsChunksAndErrors() async throws {
        let stream = ByteStream()
        async let first = stream.next()
        try await Task.sleep(for: .milliseconds(10))
        stream.yield([7])
        #expect(try await first == [7])
        stream.fail(ByteStreamError.aborted)
        await #expect(throws: ByteStreamError.aborted) { _ = try await stream.next() }
    }

    @Test func collectEnforcesTheLimit() async throws {
        let stream = ByteStream.complete([UInt8](repeating: 0, count: 100))
        await #expect(throws: ByteStreamError.tooLarge) { _ = try await stream.collect(upTo: 99) }
        #expect(try await ByteStream.complete([1, 2, 3]).collect(upTo: 3) == [1, 2, 3])
    }
}
