/// The receive buffer shared by the HTTP/1 parsers: a growable byte array with a read index.
///
/// Consumed bytes are dropped lazily: the storage is reset when everything has been read and compacted with a
/// single move when the consumed prefix dominates, so appends and reads stay amortised O(n).
struct HTTP1ByteBuffer: Sendable {
    private(set) var storage: [UInt8] = []
    private(set) var readIndex: Int = 0

    init() {}

    /// Bytes received and not yet consumed.
    var readableCount: Int { storage.count - readIndex }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        compactIfUseful()
        storage.append(contentsOf: bytes)
    }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        compactIfUseful()
        storage.append(contentsOf: bytes)
    }

    private mutating func compactIfUseful() {
        if readIndex == 0 { return }
        if readIndex >= storage.count {
            storage.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= 4096 && readIndex * 2 >= storage.count {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }

    /// Marks `count` readable bytes as consumed (clamped to what is readable).
    mutating func consume(_ count: Int) {
        readIndex += min(max(count, 0), readableCount)
    }

    /// Drops every readable byte.
    mutating func consumeAll() {
        readIndex = storage.count
    }

    /// Calls `body` with the readable bytes. The pointer must not escape.
    func withReadableBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let start = readIndex
        return storage.withUnsafeBytes { all in body(UnsafeRawBufferPointer(rebasing: all[start...])) }
    }

    /// The first `count` readable bytes as a new array, consumed.
    mutating func read(_ count: Int) -> [UInt8] {
        let count = min(max(count, 0), readableCount)
        let bytes = Array(storage[readIndex..<(readIndex + count)])
        readIndex += count
        return bytes
    }

    /// The readable byte at `offset`, if buffered.
    func byte(at offset: Int) -> UInt8? {
        guard offset >= 0, offset < readableCount else { return nil }
        return storage[readIndex + offset]
    }
}
