/// The storage behind ``HTTPFields``: one heap block holding the field entries and, after them, the bytes of every
/// name and value, back to back. An entry is a few integers (``HTTPFieldEntry``), so reading, iterating and copying
/// fields between lists costs no reference counting per field, and no `String` is made unless one is asked for.
///
/// Copy-on-write: ``HTTPFields`` mutates a storage only while it holds the one reference to it, and copies it
/// otherwise (which is why ``HTTPFields`` is `Sendable`: a shared storage is never written). A field changed or removed leaves its old bytes in place (unreferenced); a copy or a growth writes only
/// the bytes still referenced.
@usableFromInline
final class HTTPFieldStorage: ManagedBuffer<HTTPFieldStorage.Header, UInt8> {
    @usableFromInline
    struct Header: Sendable {
        /// Fields in use, and room for fields (the entries region is `entryCapacity * entryStride` bytes).
        @usableFromInline var count: Int
        @usableFromInline var entryCapacity: Int
        /// Bytes in use in the bytes region (referenced or not), and its size.
        @usableFromInline var byteCount: Int
        @usableFromInline var byteCapacity: Int

        @usableFromInline
        init(entryCapacity: Int, byteCapacity: Int) {
            count = 0
            self.entryCapacity = entryCapacity
            byteCount = 0
            self.byteCapacity = byteCapacity
        }
    }

    @inlinable static var entryStride: Int { MemoryLayout<HTTPFieldEntry>.stride }

    /// A new, empty storage with room for `entries` fields and `bytes` bytes of names and values.
    @usableFromInline
    static func make(entries: Int, bytes: Int) -> HTTPFieldStorage {
        let entries = max(entries, 1)
        let bytes = max(bytes, 16)
        let made = create(minimumCapacity: entries * entryStride + bytes) { _ in
            Header(entryCapacity: entries, byteCapacity: bytes)
        }
        return unsafeDowncast(made, to: HTTPFieldStorage.self)
    }

    /// The number of fields (read through the header's pointer: the `header` property checks exclusivity at run time).
    @inlinable
    var fieldCount: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }

    /// The header's counts (read without an exclusivity check).
    @inlinable
    var counts: Header { withUnsafeMutablePointerToHeader { $0.pointee } }

    /// Whether `entries` fields in all and `bytes` more bytes fit.
    @inlinable
    func fits(entries: Int, bytes: Int) -> Bool {
        withUnsafeMutablePointerToHeader {
            $0.pointee.entryCapacity >= entries && $0.pointee.byteCapacity - $0.pointee.byteCount >= bytes
        }
    }

    /// Whether one more field and `bytes` more bytes fit.
    @inlinable
    func fitsOneMore(bytes: Int) -> Bool {
        withUnsafeMutablePointerToHeader {
            $0.pointee.entryCapacity > $0.pointee.count && $0.pointee.byteCapacity - $0.pointee.byteCount >= bytes
        }
    }

    /// Calls `body` with the entries and the bytes region.
    @inlinable @inline(__always)
    func withRegions<R>(
        _ body: (HTTPFieldEntries, UnsafeMutablePointer<UInt8>, inout Header) throws -> R
    ) rethrows -> R {
        try withUnsafeMutablePointers { header, elements in
            let bytes = elements + header.pointee.entryCapacity &* HTTPFieldStorage.entryStride
            return try body(HTTPFieldEntries(base: UnsafeMutableRawPointer(elements)), bytes, &header.pointee)
        }
    }

    /// A copy with room for at least `entries` fields and `bytes` more bytes than the live ones; only the bytes the
    /// entries reference are copied (in entry order, so the copy has no holes).
    @usableFromInline
    func copy(reservingEntries entries: Int, bytes extra: Int) -> HTTPFieldStorage {
        withRegions { sourceEntries, sourceBytes, header in
            var live = 0
            for index in 0..<header.count { live += sourceEntries[index].storedByteCount }
            let copy = HTTPFieldStorage.make(entries: max(entries, header.count), bytes: live + extra)
            copy.withRegions { targetEntries, targetBytes, targetHeader in
                var offset = 0
                for index in 0..<header.count {
                    var entry = sourceEntries[index]
                    let name = Int(entry.nameStart)
                    let nameCount = Int(entry.nameCount)
                    (targetBytes + offset).update(from: sourceBytes + name, count: nameCount)
                    entry.nameStart = UInt32(offset)
                    offset += nameCount
                    HTTPFieldEntry.writeSeparator(at: targetBytes + offset)
                    offset += HTTPFieldEntry.separatorCount
                    let value = Int(entry.valueStart)
                    let valueCount = Int(entry.valueCount)
                    (targetBytes + offset).update(from: sourceBytes + value, count: valueCount)
                    entry.valueStart = UInt32(offset)
                    offset += valueCount
                    targetEntries[index] = entry
                }
                targetHeader.count = header.count
                targetHeader.byteCount = offset
            }
            return copy
        }
    }
}

/// The entries region of an ``HTTPFieldStorage``, read and written as raw memory (the block is bound to bytes).
@usableFromInline @frozen
struct HTTPFieldEntries {
    @usableFromInline let base: UnsafeMutableRawPointer

    @inlinable
    init(base: UnsafeMutableRawPointer) { self.base = base }

    @inlinable
    subscript(index: Int) -> HTTPFieldEntry {
        @inline(__always) get {
            base.load(fromByteOffset: index &* HTTPFieldStorage.entryStride, as: HTTPFieldEntry.self)
        }
        @inline(__always) nonmutating set {
            base.storeBytes(of: newValue, toByteOffset: index &* HTTPFieldStorage.entryStride, as: HTTPFieldEntry.self)
        }
    }

    /// Moves entries `from..<count` down to `to` (removal).
    @inlinable
    func move(from: Int, to: Int, count: Int) {
        guard count > 0 else { return }
        (base + to &* HTTPFieldStorage.entryStride).copyMemory(
            from: base + from &* HTTPFieldStorage.entryStride,
            byteCount: count &* HTTPFieldStorage.entryStride)
    }
}

/// One field of an ``HTTPFields`` list: where its name and value lie in the list's bytes, and the name's token.
@usableFromInline
struct HTTPFieldEntry: Sendable, BitwiseCopyable {
    @usableFromInline var nameStart: UInt32
    @usableFromInline var nameCount: UInt32
    @usableFromInline var valueStart: UInt32
    @usableFromInline var valueCount: UInt32
    /// ``HTTPFieldName`` of the name, found once when the field was added.
    @usableFromInline var token: HTTPFieldName
    /// ``HTTPFieldEntry/validated`` and the like.
    @usableFromInline var flags: UInt8

    /// The name is a token and the value has only field-value bytes (the parser's fields): written without checking
    /// again.
    @usableFromInline static let validated: UInt8 = 1

    @inlinable
    init(nameStart: Int, nameCount: Int, valueStart: Int, valueCount: Int, token: HTTPFieldName, flags: UInt8) {
        self.nameStart = UInt32(nameStart)
        self.nameCount = UInt32(nameCount)
        self.valueStart = UInt32(valueStart)
        self.valueCount = UInt32(valueCount)
        self.token = token
        self.flags = flags
    }

    @inlinable var byteCount: Int { Int(nameCount) + Int(valueCount) }

    /// The bytes an append stores for the field: its name, `: ` and its value, so that a header line is copied from
    /// the storage in one run (see ``isStoredAsLine(in:)``).
    @inlinable var storedByteCount: Int { byteCount &+ HTTPFieldEntry.separatorCount }

    /// The `: ` stored between a field's name and its value.
    @usableFromInline static let separatorCount = 2

    /// Writes `: ` at `target`.
    @inlinable @inline(__always)
    static func writeSeparator(at target: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(target).storeBytes(of: UInt16(0x203A).littleEndian, as: UInt16.self)  // ": "
    }

    /// Whether the field's name, `: ` and value lie back to back in `bytes` (the storage's bytes region), so
    /// `name: value` is one run from ``nameStart``: true for every field appended or copied whole, and for a parsed
    /// line with one space after its colon; false for a value set later, which lies elsewhere.
    @inlinable @inline(__always)
    func isStoredAsLine(in bytes: UnsafeMutablePointer<UInt8>) -> Bool {
        let separator = Int(nameStart) &+ Int(nameCount)
        guard Int(valueStart) == separator &+ HTTPFieldEntry.separatorCount else { return false }
        return UInt16(littleEndian: UnsafeRawPointer(bytes + separator).loadUnaligned(as: UInt16.self)) == 0x203A
    }
}
