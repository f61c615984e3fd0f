import Testing

@testable import HTTPWire

/// What ``HTTP1ByteBuffer/read(_:)`` hands out holds no more memory than the bytes it counts: body streams bound what
/// they keep by that count (UP-08).
struct HTTP1ByteBufferTests {
    @Test func shortReadsAfterALongOneAreHandedOutAtTheirOwnSize() {
        var buffer = HTTP1ByteBuffer()
        let long = [UInt8](repeating: 1, count: 64 * 1024)
        long.withUnsafeBytes { buffer.append($0) }
        let first = buffer.read(long.count)
        #expect(first == long)
        #expect(first.capacity - first.count <= HTTP1ByteBuffer.spareCapacityHandedOver)
        for size in [1, 10, 700] {
            let short = [UInt8](repeating: 2, count: size)
            short.withUnsafeBytes { buffer.append($0) }
            let chunk = buffer.read(size)
            #expect(chunk == short)
            #expect(chunk.capacity < 4096 + size, "\(size) bytes held \(chunk.capacity) bytes of storage")
        }
        #expect(first == long, "a chunk handed out is not changed by later appends")
    }

    @Test func partialReadsAreCopiesOfTheirBytes() {
        var buffer = HTTP1ByteBuffer()
        let bytes = [UInt8](0..<200)
        bytes.withUnsafeBytes { buffer.append($0) }
        let head = buffer.read(50)
        let rest = buffer.read(500)
        #expect(head == Array(bytes[0..<50]))
        #expect(rest == Array(bytes[50...]))
        #expect(head.capacity < 4096 && rest.capacity < 4096)
        #expect(buffer.readableCount == 0)
    }
}
