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
