/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Names keep the spelling they arrived with; comparisons ignore ASCII case. Repeated fields stay separate entries,
/// in order, so nothing a peer sent is merged or lost.
///
/// The fields live as bytes in one block (``HTTPFieldStorage``): each field is an entry of offsets and its name's
/// token (``HTTPFieldName``), found once when the field is added. The parsers append a line's bytes as they are, the
/// serializers copy them out, and a field goes from one list to another (``add(fieldAt:of:)``) as bytes: none of
/// these makes a `String` or counts a reference per field. A `String` is made only when one is asked for (``Field``,
/// ``first(name:)``, the subscript); names and values that are not valid UTF-8 read as U+FFFD there, while their
/// bytes stay as received.
public struct HTTPFields: @unchecked Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    /// One header field.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        @inlinable
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// nil while there is no field (no allocation for an empty list).
    @usableFromInline var storage: HTTPFieldStorage?

    /// An empty list (no storage until a field is added, and no array of pairs to make and release).
    @inlinable
    public init() { storage = nil }

    /// Creates headers from `(name, value)` pairs, in order.
    package init(_ pairs: [(String, String)] = []) {
        storage = nil
        guard !pairs.isEmpty else { return }
        var bytes = 0
        for (name, value) in pairs { bytes += name.utf8.count + value.utf8.count + HTTPFieldEntry.separatorCount }
        reserve(entries: pairs.count, bytes: bytes)
        for (name, value) in pairs { add(name: name, value: value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of fields, repeated names counted separately.
    @inlinable
    public var count: Int {
        if storage == nil { return 0 }
        return Unmanaged.passUnretained(storage.unsafelyUnwrapped)._withUnsafeGuaranteedRef { $0.fieldCount }
    }

    @inlinable
    public var isEmpty: Bool { count == 0 }

    @inlinable
    public var underestimatedCount: Int { count }

    /// The fields in order, each as a ``Field`` of two strings made from its bytes.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let headers: HTTPFields
        @usableFromInline var index = 0

        @inlinable
        init(headers: HTTPFields) { self.headers = headers }

        @inlinable
        public mutating func next() -> Field? {
            guard index < headers.count else { return nil }
            defer { index += 1 }
            return headers.field(at: index)
        }
    }

    @inlinable
    public func makeIterator() -> Iterator { Iterator(headers: self) }

    /// Reserves room for `capacity` fields (and a typical field's bytes each).
    package mutating func reserveCapacity(_ capacity: Int) {
        reserve(entries: capacity, bytes: capacity * 32)
    }

    /// Reserves room for `fields` fields and `bytes` bytes of names and values.
    package mutating func reserveCapacity(fields: Int, bytes: Int) {
        reserve(entries: fields, bytes: bytes)
    }

    // MARK: Reading fields by position (no strings, no reference counting)

    /// Calls `body` with the storage's regions (`ifEmpty` when there is none), without retaining the storage for the
    /// call: this value holds it.
    @inlinable @inline(__always)
    func withRegions<R>(
        ifEmpty empty: @autoclosure () throws -> R,
        _ body: (HTTPFieldEntries, UnsafeMutablePointer<UInt8>, inout HTTPFieldStorage.Header) throws -> R
    ) rethrows -> R {
        // Neither the nil check nor the unwrapping copies the reference (an `if let` may retain it).
        if storage == nil { return try empty() }
        return try Unmanaged.passUnretained(storage.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
            try $0.withRegions(body)
        }
    }

    /// The field at `index` (0 ..< ``count``) as strings.
    public func field(at index: Int) -> Field {
        withField(at: index) { name, value in
            Field(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        }
    }

    /// The name of the field at `index`, as a string.
    package func name(at index: Int) -> String {
        withField(at: index) { name, _ in String(decoding: name, as: UTF8.self) }
    }

    /// The value of the field at `index`, as a string.
    package func value(at index: Int) -> String {
        withField(at: index) { _, value in String(decoding: value, as: UTF8.self) }
    }

    /// The token of the name of the field at `index` (``HTTPFieldName/other`` for a name not in the table).
    @inlinable
    public func token(at index: Int) -> HTTPFieldName {
        withRegions(ifEmpty: .other) { entries, _, header in
            index >= 0 && index < header.count ? entries[index].token : .other
        }
    }

    /// Calls `body` with the bytes of the name and the value of the field at `index`; they are valid only inside it.
    @inlinable
    public func withField<R>(
        at index: Int, _ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        try withRegions(
            ifEmpty: try body(
                UnsafeRawBufferPointer(start: nil, count: 0),
                UnsafeRawBufferPointer(start: nil, count: 0))
        ) { entries, bytes, header in
            guard index >= 0 && index < header.count else {
                return try body(
                    UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0))
            }
            let entry = entries[index]
            return try body(
                UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
                UnsafeRawBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)))
        }
    }

    /// Calls `body` with each field's token and the bytes of its name and value, in order, in one pass over the
    /// storage; the bytes are valid only inside `body`.
    @inlinable
    public func forEachField(
        _ body: (_ token: HTTPFieldName, _ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void
    ) rethrows {
        try withRegions(ifEmpty: ()) { entries, bytes, header in
            for index in 0..<header.count {
                let entry = entries[index]
                try body(
                    entry.token,
                    UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
                    UnsafeRawBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)))
            }
        }
    }

    /// The position of the first field named `name` at or after `start`.
    package func firstIndex(name: String, from start: Int = 0) -> Int? {
        HTTPFields.withBytes(of: name) { nameBytes in
            firstIndex(token: HTTPFieldName.lookup(nameBytes), bytes: nameBytes, from: start)
        }
    }

    public var description: String {
        map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    // MARK: Equality and hashing: the fields' bytes, in order

    public static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.storage === rhs.storage { return true }
        for index in 0..<lhs.count {
            let same = lhs.withField(at: index) { leftName, leftValue in
                rhs.withField(at: index) { rightName, rightValue in
                    leftName.elementsEqual(rightName) && leftValue.elementsEqual(rightValue)
                }
            }
            if !same { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        forEachField { _, name, value in
            hasher.combine(name.count)
            hasher.combine(bytes: name)
            hasher.combine(value.count)
            hasher.combine(bytes: value)
        }
    }

    // MARK: Storage

    /// Room for `entries` fields in all and `bytes` more bytes, in a storage this value alone holds.
    mutating func makeRoom(entries: Int, bytes: Int) {
        // Checked before any other reference to the storage is taken (a local one would make it look shared).
        if isKnownUniquelyReferenced(&storage),
            Unmanaged.passUnretained(storage.unsafelyUnwrapped)._withUnsafeGuaranteedRef({
                $0.fits(entries: entries, bytes: bytes)
            })
        {
            return
        }
        guard let current = storage else {
            storage = HTTPFieldStorage.make(entries: Swift.max(entries, 8), bytes: Swift.max(bytes, 256))
            return
        }
        let header = current.counts
        let fits = current.fits(entries: entries, bytes: bytes)
        // Grown geometrically: at least twice the entries, and at least the old capacity free for bytes.
        storage = current.copy(
            reservingEntries: header.entryCapacity >= entries
                ? header.entryCapacity : Swift.max(entries, header.entryCapacity * 2),
            bytes: fits
                ? Swift.max(bytes, header.byteCapacity - header.byteCount) : Swift.max(bytes, header.byteCapacity))
    }

    mutating func reserve(entries: Int, bytes: Int) {
        makeRoom(entries: entries, bytes: bytes)
    }

    /// Makes room for one more field of `bytes` bytes: checked in place (no call) while the storage is this value's
    /// alone and has room, else through ``makeRoom(entries:bytes:)``.
    @inline(__always)
    mutating func makeRoomForOneMore(bytes: Int) {
        if storage == nil || !isKnownUniquelyReferenced(&storage)
            || !Unmanaged.passUnretained(storage.unsafelyUnwrapped)._withUnsafeGuaranteedRef({
                $0.fitsOneMore(bytes: bytes)
            })
        {
            makeRoom(entries: count + 1, bytes: bytes)
        }
    }

    mutating func append(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, token: HTTPFieldName,
        flags: UInt8
    ) {
        makeRoomForOneMore(bytes: name.count &+ value.count &+ HTTPFieldEntry.separatorCount)
        appendInRoom(name: name, value: value, token: token, flags: flags)
    }

    /// ``append(name:value:token:flags:)`` once ``makeRoomForOneMore(bytes:)`` made room for the field: it only
    /// copies bytes (so, called inside a closure that reads a string's bytes, it gives no reason to retain the string).
    @inline(__always)
    mutating func appendInRoom(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, token: HTTPFieldName, flags: UInt8
    ) {
        withRegions(ifEmpty: ()) { entries, bytes, header in
            let nameStart = header.byteCount
            if let base = name.baseAddress, !name.isEmpty {
                UnsafeMutableRawPointer(bytes + nameStart).copyMemory(from: base, byteCount: name.count)
            }
            // `name: value`, as a header line has them (see ``HTTPFieldEntry/separatorCount``).
            HTTPFieldEntry.writeSeparator(at: bytes + (nameStart &+ name.count))
            let valueStart = nameStart &+ name.count &+ HTTPFieldEntry.separatorCount
            if let base = value.baseAddress, !value.isEmpty {
                UnsafeMutableRawPointer(bytes + valueStart).copyMemory(from: base, byteCount: value.count)
            }
            // The end offset fits in 32 bits, so every offset and count before it does.
            header.byteCount = Int(HTTPFields.offset(valueStart &+ value.count))
            var entry = HTTPFieldEntry(
                nameStart: 0, nameCount: 0, valueStart: 0, valueCount: 0, token: token, flags: flags)
            entry.nameStart = UInt32(truncatingIfNeeded: nameStart)
            entry.nameCount = UInt32(truncatingIfNeeded: name.count)
            entry.valueStart = UInt32(truncatingIfNeeded: valueStart)
            entry.valueCount = UInt32(truncatingIfNeeded: value.count)
            entries[header.count] = entry
            header.count &+= 1
        }
    }

    /// `value` as a 32-bit offset: a list's bytes stay under 4 GiB (the parsers' limits are far below).
    static func offset(_ value: Int) -> UInt32 {
        guard let offset = UInt32(exactly: value) else { fatalError("HTTPFields: more than 4 GiB of field bytes") }
        return offset
    }

    /// The first field at or after `start` with the token `token` (when it is not ``HTTPFieldName/other``: one byte
    /// compared per field) or, for another name, the name `bytes` ignoring ASCII case.
    func firstIndex(token: HTTPFieldName, bytes name: UnsafeRawBufferPointer, from start: Int) -> Int? {
        withRegions(ifEmpty: nil) { entries, bytes, header -> Int? in
            guard start < header.count else { return nil }
            if token != .other {
                for index in Swift.max(start, 0)..<header.count where entries[index].token == token { return index }
                return nil
            }
            for index in Swift.max(start, 0)..<header.count {
                let entry = entries[index]
                guard entry.token == .other, Int(entry.nameCount) == name.count else { continue }
                if HTTPFields.equalsIgnoringASCIICase(
                    UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: name.count), name)
                {
                    return index
                }
            }
            return nil
        }
    }

    /// ASCII case-insensitive equality of two byte runs.
    @inlinable
    static func equalsIgnoringASCIICase(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in 0..<lhs.count where lhs[index] != rhs[index] {
            guard String.asciiCaseInsensitiveEqual(lhs[index], rhs[index]) else { return false }
        }
        return true
    }

    /// Whether a field with `candidate` token and name `candidateName` is the one looked up as `query` (its token)
    /// and `name` (its bytes, compared for a name not in the table).
    static func matches(
        _ candidate: HTTPFieldName, _ candidateName: UnsafeRawBufferPointer,
        _ query: HTTPFieldName, _ name: UnsafeRawBufferPointer
    ) -> Bool {
        if query != .other { return candidate == query }
        return candidate == .other && equalsIgnoringASCIICase(candidateName, name)
    }

    /// Calls `body` with the UTF-8 bytes of `string`, in place when it has them contiguous (no copy of the string,
    /// so no reference counting), else from a copy.
    @inlinable
    static func withBytes<R>(of string: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let result = try string.utf8.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return try Array(string.utf8).withUnsafeBytes(body)
    }
}
