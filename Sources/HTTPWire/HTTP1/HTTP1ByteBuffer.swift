/// The receive buffer shared by the HTTP/1 parsers: a growable byte array with a read index and an end index.
///
/// The readable bytes are `storage[readIndex..<end]`. Consumed bytes are dropped lazily: once everything has been
/// read, both indices go back to zero and the next bytes are written over the old ones in place (the array keeps its
/// count, so no array operation runs per message), and when the consumed prefix dominates the rest is moved down once,
/// so appends and reads stay amortised O(n).
struct HTTP1ByteBuffer: Sendable {
    /// The bytes; only `readIndex..<end` are readable (beyond `end`, bytes already read, kept as room).
    private(set) var storage: [UInt8] = []
    private(set) var readIndex: Int = 0
    /// The end of the readable bytes (at most `storage.count`).
    private var end: Int = 0

    init() {}

    /// Bytes received and not yet consumed.
    var readableCount: Int { end - readIndex }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        compactIfUseful()
        let count = bytes.count
        if storage.count - end >= count {
            // Written over bytes already read, in place.
            let start = end
            storage.withUnsafeMutableBytes {
                ($0.baseAddress.unsafelyUnwrapped + start).copyMemory(from: source, byteCount: count)
            }
        } else {
            if end < storage.count { storage.removeSubrange(end...) }
            storage.append(contentsOf: bytes)
        }
        end += count
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    private mutating func compactIfUseful() {
        if readIndex == 0 { return }
        if readIndex >= end {
            readIndex = 0
            end = 0
        } else if readIndex >= 4096 && readIndex * 2 >= end {
            let start = readIndex
            let count = end - readIndex
            storage.withUnsafeMutableBytes { all in
                guard let base = all.baseAddress else { return }
                base.copyMemory(from: base + start, byteCount: count)
            }
            readIndex = 0
            end = count
        }
    }

    /// Marks `count` readable bytes as consumed (clamped to what is readable).
    mutating func consume(_ count: Int) {
        readIndex += min(max(count, 0), readableCount)
    }

    /// Drops every readable byte.
    mutating func consumeAll() {
        readIndex = end
    }

    /// Calls `body` with the readable bytes. The pointer must not escape.
    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let start = readIndex
        let end = end
        return storage.withUnsafeBytes { all in body(UnsafeRawBufferPointer(rebasing: all[start..<end])) }
    }

    /// The first `count` readable bytes as an array of their own, consumed: it holds no more memory than the bytes
    /// it counts, since whoever takes it (a body stream) bounds what it keeps by that count.
    ///
    /// When they are the whole buffer, and it has little spare capacity, the storage itself is handed over and the
    /// buffer starts anew (no copy). Otherwise they are copied out. (`Array(storage[0..<storage.count])` would share
    /// the storage, spare capacity included, and the next append would then allocate another buffer of that
    /// capacity: a body read in short reads made chunks counting a few bytes that held 64 KiB each.)
    mutating func read(_ count: Int) -> [UInt8] {
        let count = min(max(count, 0), readableCount)
        if readIndex == 0, count == storage.count, storage.capacity - count <= Self.spareCapacityHandedOver {
            let bytes = storage
            storage = []
            end = 0
            return bytes
        }
        let start = readIndex
        let bytes = storage.withUnsafeBufferPointer {
            [UInt8](UnsafeBufferPointer(rebasing: $0[start..<(start + count)]))
        }
        readIndex += count
        return bytes
    }

    /// The most unused capacity a buffer may carry when it is handed over whole by ``read(_:)``.
    static let spareCapacityHandedOver = 4096

    /// The readable byte at `offset`, if buffered.
    func byte(at offset: Int) -> UInt8? {
        guard offset >= 0, offset < readableCount else { return nil }
        return storage[readIndex + offset]
    }
}
