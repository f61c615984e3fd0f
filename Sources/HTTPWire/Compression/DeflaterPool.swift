import Locking

/// Reusable deflate streams for one coding and level, for compressing whole bodies.
///
/// Setting up a zlib stream allocates about 256 KiB (window, hash chains, pending buffer); doing that per response
/// costs more than compressing a small body. The pool keeps up to `capacity` idle streams and resets them
/// (`deflateReset`) between bodies. A stream is used by one caller at a time: it leaves the pool while it works.
package final class DeflaterPool: Sendable {
    package let coding: ContentCoding
    package let level: Int32
    package let capacity: Int
    private let idle = Locked<[UnsafeTransfer]>([])

    /// A deflater handed between callers through the pool; only one holder uses it at a time.
    private struct UnsafeTransfer: @unchecked Sendable {
        let deflater: Deflater
    }

    package init(coding: ContentCoding, level: Int32, capacity: Int = 8) {
        self.coding = coding
        self.level = level
        self.capacity = capacity
    }

    /// Compresses a whole body with a pooled stream (a new one when none is idle).
    package func compress(_ bytes: [UInt8]) throws(CompressionError) -> [UInt8] {
        let deflater: Deflater
        if let reused = idle.withLock({ $0.popLast() }) {
            deflater = reused.deflater
        } else {
            deflater = try Deflater(coding: coding, level: level)
        }
        let output = try deflater.compressWhole(bytes)
        try deflater.reset()
        let transfer = UnsafeTransfer(deflater: deflater)
        idle.withLock { pool in
            if pool.count < capacity { pool.append(transfer) }
        }
        return output
    }
}
