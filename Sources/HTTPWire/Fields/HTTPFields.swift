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
package struct HTTPFields: @unchecked Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    package struct Field: Sendable, Hashable {
        package var name: String
        package var value: String

        @inlinable
        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// nil while there is no field (no allocation for an empty list).
    @usableFromInline var storage: HTTPFieldStorage?

    /// Creates headers from `(name, value)` pairs, in order.
    package init(_ pairs: [(String, String)] = []) {
        storage = nil
        guard !pairs.isEmpty else { return }
        var bytes = 0
        for (name, value) in pairs { bytes += name.utf8.count + value.utf8.count }
        reserve(entries: pairs.count, bytes: bytes)
        for (name, value) in pairs { add(name: name, value: value) }
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of fields, repeated names counted separately.
    @inlinable
    package var count: Int {
        if storage == nil { return 0 }
        return Unmanaged.passUnretained(storage.unsafelyUnwrapped)._withUnsafeGuaranteedRef { $0.fieldCount }
    }

    @inlinable
    package var isEmpty: Bool { count == 0 }

    @inlinable
    package var underestimatedCount: Int { count }

    /// The fields in order, each as a ``Field`` of two strings made from its bytes.
    package struct Iterator: IteratorProtocol {
        @usableFromInline let headers: HTTPFields
        @usableFromInline var index = 0

        @inlinable
        init(headers: HTTPFields) { self.headers = headers }

        @inlinable
        package mutating func next() -> Field? {
            guard index < headers.count else { return nil }
            defer { index += 1 }
            return headers.field(at: index)
        }
    }

    @inlinable
    package func makeIterator() -> Iterator { Iterator(headers: self) }

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
    package func field(at index: Int) -> Field {
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
    package func token(at index: Int) -> HTTPFieldName {
        withRegions(ifEmpty: .other) { entries, _, header in
            index >= 0 && index < header.count ? entries[index].token : .other
        }
    }

    /// Calls `body` with the bytes of the name and the value of the field at `index`; they are valid only inside it.
    @inlinable
    package func withField<R>(
        at index: Int, _ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        try withRegions(ifEmpty: try body(UnsafeRawBufferPointer(start: nil, count: 0),
                                          UnsafeRawBufferPointer(start: nil, count: 0))) { entries, bytes, header in
            guard index >= 0 && index < header.count else {
                return try body(UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0))
            }
            let entry = entries[index]
            return try body(UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
                            UnsafeRawBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)))
        }
    }

    /// Calls `body` with each field's token and the bytes of its name and value, in order, in one pass over the
    /// storage; the bytes are valid only inside `body`.
    @inlinable
    package func forEachField(
        _ body: (_ token: HTTPFieldName, _ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void
    ) rethrows {
        try withRegions(ifEmpty: ()) { entries, bytes, header in
            for index in 0..<header.count {
                let entry = entries[index]
                try body(entry.token,
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

    // MARK: Adding fields

    /// Appends a field, keeping any existing field of the same name.
    package mutating func add(name: String, value: String) {
        HTTPFields.withBytes(of: name) { nameBytes in
            HTTPFields.withBytes(of: value) { valueBytes in
                append(name: nameBytes, value: valueBytes, token: HTTPFieldName.lookup(nameBytes), flags: 0)
            }
        }
    }

    /// Appends a field as it is.
    package mutating func add(_ field: Field) {
        add(name: field.name, value: field.value)
    }

    /// Appends the field at `index` of `other` (its bytes and token, as they are: no string is made).
    package mutating func add(fieldAt index: Int, of other: HTTPFields) {
        other.withRegions(ifEmpty: ()) { entries, bytes, header in
            guard index >= 0 && index < header.count else { return }
            let entry = entries[index]
            append(name: UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
                   value: UnsafeRawBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)),
                   token: entry.token, flags: entry.flags)
        }
    }

    /// Appends a field whose name is a token and whose value has only field-value bytes, as the HTTP/1 parsers check
    /// (the serializer then copies it without checking again). `token` is the name's, if the caller knows it.
    package mutating func addValidated(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                                       token: HTTPFieldName? = nil) {
        append(name: name, value: value, token: token ?? HTTPFieldName.lookup(name), flags: HTTPFieldEntry.validated)
    }

    /// Appends `other`'s fields, in order, keeping every existing field.
    package mutating func append(contentsOf other: HTTPFields) {
        guard !other.isEmpty else { return }
        if storage == nil {
            storage = other.storage
            return
        }
        other.withRegions(ifEmpty: ()) { entries, bytes, header in
            var needed = 0
            for index in 0..<header.count { needed += entries[index].byteCount }
            reserve(entries: count + header.count, bytes: needed)
            for index in 0..<header.count {
                let entry = entries[index]
                append(name: UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
                       value: UnsafeRawBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)),
                       token: entry.token, flags: entry.flags)
            }
        }
    }

    // MARK: Replacing and removing

    /// Replaces every field named `name` with one field holding `value`, at the position of the first.
    package mutating func replaceOrAdd(name: String, value: String) {
        guard let first = firstIndex(name: name) else {
            add(name: name, value: value)
            return
        }
        setValue(value, at: first)
        HTTPFields.withBytes(of: name) { nameBytes in
            let query = HTTPFieldName.lookup(nameBytes)
            removeAll(after: first) { token, candidate in HTTPFields.matches(token, candidate, query, nameBytes) }
        }
    }

    /// Sets the value of the field at `index` (its new bytes are appended; the entry points at them).
    package mutating func setValue(_ value: String, at index: Int) {
        guard index >= 0, index < count else { return }
        HTTPFields.withBytes(of: value) { valueBytes in
            makeRoom(entries: 0, bytes: valueBytes.count)
            withRegions(ifEmpty: ()) { entries, bytes, header in
                let start = header.byteCount
                if let base = valueBytes.baseAddress, !valueBytes.isEmpty {
                    UnsafeMutableRawPointer(bytes + start).copyMemory(from: base, byteCount: valueBytes.count)
                }
                header.byteCount = start + valueBytes.count
                var entry = entries[index]
                entry.valueStart = HTTPFields.offset(start)
                entry.valueCount = HTTPFields.offset(valueBytes.count)
                entry.flags &= ~HTTPFieldEntry.validated
                entries[index] = entry
            }
        }
    }

    /// Removes every field whose name `other` has (ignoring ASCII case), then appends `other`'s fields in order:
    /// `other` replaces what it names, repeated fields included, and leaves the rest alone.
    package mutating func replaceOrAdd(_ other: HTTPFields) {
        if isEmpty {
            self = other
            return
        }
        removeAll { token, name in other.contains(token: token, bytes: name) }
        append(contentsOf: other)
    }

    /// Removes every field named `name`.
    package mutating func remove(name: String) {
        guard firstIndex(name: name) != nil else { return }
        HTTPFields.withBytes(of: name) { nameBytes in
            let query = HTTPFieldName.lookup(nameBytes)
            removeAll { token, candidate in HTTPFields.matches(token, candidate, query, nameBytes) }
        }
    }

    /// Removes every field for which `shouldRemove` (given its token and the bytes of its name) is true, keeping the
    /// others in order.
    package mutating func removeAll(
        where shouldRemove: (_ token: HTTPFieldName, _ name: UnsafeRawBufferPointer) throws -> Bool
    ) rethrows {
        try removeAll(after: -1, where: shouldRemove)
    }

    private mutating func removeAll(
        after first: Int, where shouldRemove: (HTTPFieldName, UnsafeRawBufferPointer) throws -> Bool
    ) rethrows {
        guard count > first + 1 else { return }
        // Find the first field to remove before making the storage unique: most calls remove nothing.
        var firstRemoved: Int?
        try withRegions(ifEmpty: ()) { entries, bytes, header in
            for index in (first + 1)..<header.count {
                let entry = entries[index]
                if try shouldRemove(entry.token, UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart),
                                                                       count: Int(entry.nameCount))) {
                    firstRemoved = index
                    return
                }
            }
        }
        guard let firstRemoved else { return }
        makeRoom(entries: 0, bytes: 0)
        try withRegions(ifEmpty: ()) { entries, bytes, header in
            var kept = firstRemoved
            for index in (firstRemoved + 1)..<header.count {
                let entry = entries[index]
                if try shouldRemove(entry.token, UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart),
                                                                       count: Int(entry.nameCount))) {
                    continue
                }
                entries[kept] = entry
                kept += 1
            }
            header.count = kept
        }
    }

    // MARK: Lookup

    /// Whether a field named `name` is present.
    package func contains(name: String) -> Bool {
        firstIndex(name: name) != nil
    }

    /// Whether a field named as the bytes `name` spell (ignoring ASCII case) is present.
    package func contains(nameBytes name: UnsafeRawBufferPointer) -> Bool {
        firstIndex(token: HTTPFieldName.lookup(name), bytes: name, from: 0) != nil
    }

    /// Whether a field has the token `token` (when it is not ``HTTPFieldName/other``) or the name `bytes`.
    func contains(token: HTTPFieldName, bytes: UnsafeRawBufferPointer) -> Bool {
        firstIndex(token: token, bytes: bytes, from: 0) != nil
    }

    /// Whether a field named `name` has a value for which `predicate` is true.
    package func contains(name: String, where predicate: (String) -> Bool) -> Bool {
        HTTPFields.withBytes(of: name) { nameBytes in
            let token = HTTPFieldName.lookup(nameBytes)
            var index = 0
            while let found = firstIndex(token: token, bytes: nameBytes, from: index) {
                if predicate(value(at: found)) { return true }
                index = found + 1
            }
            return false
        }
    }

    /// The value of the first field named `name`.
    package func first(name: String) -> String? {
        firstIndex(name: name).map { value(at: $0) }
    }

    /// The values of every field named `name`, in order.
    package subscript(name: String) -> [String] {
        HTTPFields.withBytes(of: name) { nameBytes in
            let token = HTTPFieldName.lookup(nameBytes)
            var values: [String] = []
            var index = 0
            while let found = firstIndex(token: token, bytes: nameBytes, from: index) {
                values.append(value(at: found))
                index = found + 1
            }
            return values
        }
    }

    /// The comma-separated elements of every field named `name` (for list-valued fields such as `Connection`),
    /// trimmed of optional whitespace, empty elements dropped.
    package func tokens(name: String) -> [Substring] {
        self[name].flatMap { value in
            value.split(separator: ",").map { $0.trimmingHTTPWhitespace() }.filter { !$0.isEmpty }
        }
    }

    /// Whether the list-valued field `name` contains `token`, ignoring ASCII case.
    package func containsToken(_ token: String, name: String) -> Bool {
        guard !isEmpty else { return false }
        return HTTPFields.withBytes(of: name) { nameBytes in
            HTTPFields.withBytes(of: token) { tokenBytes in
                let nameToken = HTTPFieldName.lookup(nameBytes)
                var index = 0
                while let found = firstIndex(token: nameToken, bytes: nameBytes, from: index) {
                    if withField(at: found, { _, value in HTTPFields.list(value, contains: tokenBytes) }) { return true }
                    index = found + 1
                }
                return false
            }
        }
    }

    /// Whether the comma-separated `list` has a non-empty element equal to `token` (ignoring ASCII case) once trimmed
    /// of optional whitespace; scans the bytes without splitting.
    static func list(_ list: String, contains token: String) -> Bool {
        withBytes(of: list) { listBytes in withBytes(of: token) { HTTPFields.list(listBytes, contains: $0) } }
    }

    static func list(_ bytes: UnsafeRawBufferPointer, contains token: UnsafeRawBufferPointer) -> Bool {
        var elementStart = 0
        var index = 0
        while true {
            let atEnd = index == bytes.count
            if atEnd || bytes[index] == UInt8(ascii: ",") {
                var lower = elementStart
                var upper = index
                while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") {
                    lower += 1
                }
                while lower < upper, bytes[upper - 1] == UInt8(ascii: " ") || bytes[upper - 1] == UInt8(ascii: "\t") {
                    upper -= 1
                }
                if lower < upper, HTTPFields.equalsIgnoringASCIICase(UnsafeRawBufferPointer(rebasing: bytes[lower..<upper]), token) {
                    return true
                }
                if atEnd { return false }
                elementStart = index + 1
            }
            index += 1
        }
    }

    package var description: String {
        map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    // MARK: Equality and hashing: the fields' bytes, in order

    package static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
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

    package func hash(into hasher: inout Hasher) {
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
    private mutating func makeRoom(entries: Int, bytes: Int) {
        // Checked before any other reference to the storage is taken (a local one would make it look shared).
        if isKnownUniquelyReferenced(&storage),
           Unmanaged.passUnretained(storage.unsafelyUnwrapped)._withUnsafeGuaranteedRef({
               $0.fits(entries: entries, bytes: bytes)
           }) {
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
            reservingEntries: header.entryCapacity >= entries ? header.entryCapacity : Swift.max(entries, header.entryCapacity * 2),
            bytes: fits ? Swift.max(bytes, header.byteCapacity - header.byteCount) : Swift.max(bytes, header.byteCapacity))
    }

    private mutating func reserve(entries: Int, bytes: Int) {
        makeRoom(entries: entries, bytes: bytes)
    }

    private mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, token: HTTPFieldName,
                                 flags: UInt8) {
        makeRoom(entries: count + 1, bytes: name.count + value.count)
        withRegions(ifEmpty: ()) { entries, bytes, header in
            let nameStart = header.byteCount
            if let base = name.baseAddress, !name.isEmpty {
                UnsafeMutableRawPointer(bytes + nameStart).copyMemory(from: base, byteCount: name.count)
            }
            let valueStart = nameStart + name.count
            if let base = value.baseAddress, !value.isEmpty {
                UnsafeMutableRawPointer(bytes + valueStart).copyMemory(from: base, byteCount: value.count)
            }
            header.byteCount = valueStart + value.count
            entries[header.count] = HTTPFieldEntry(nameStart: Int(HTTPFields.offset(nameStart)),
                                                   nameCount: Int(HTTPFields.offset(name.count)),
                                                   valueStart: Int(HTTPFields.offset(valueStart)),
                                                   valueCount: Int(HTTPFields.offset(value.count)),
                                                   token: token, flags: flags)
            header.count += 1
        }
    }

    /// `value` as a 32-bit offset: a list's bytes stay under 4 GiB (the parsers' limits are far below).
    private static func offset(_ value: Int) -> UInt32 {
        guard let offset = UInt32(exactly: value) else { fatalError("HTTPFields: more than 4 GiB of field bytes") }
        return offset
    }

    /// The first field at or after `start` with the token `token` (when it is not ``HTTPFieldName/other``: one byte
    /// compared per field) or, for another name, the name `bytes` ignoring ASCII case.
    private func firstIndex(token: HTTPFieldName, bytes name: UnsafeRawBufferPointer, from start: Int) -> Int? {
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
                    UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: name.count), name) {
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
    static func matches(_ candidate: HTTPFieldName, _ candidateName: UnsafeRawBufferPointer,
                        _ query: HTTPFieldName, _ name: UnsafeRawBufferPointer) -> Bool {
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

extension String {
    /// Whether the string's UTF-8 equals `bytes`, ignoring ASCII case (a field name read from ``HTTPFields`` bytes).
    package func equalsIgnoringASCIICase(_ bytes: UnsafeRawBufferPointer) -> Bool {
        utf8.count == bytes.count && HTTPFields.withBytes(of: self) { HTTPFields.equalsIgnoringASCIICase($0, bytes) }
    }

    /// ASCII case-insensitive equality, the comparison HTTP uses for field names and tokens.
    @inlinable
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        String.equalsIgnoringASCIICase(utf8, other.utf8)
    }

    /// ASCII case-insensitive equality of two UTF-8 byte sequences.
    @inlinable
    static func equalsIgnoringASCIICase<L: Collection<UInt8>, R: Collection<UInt8>>(_ lhs: L, _ rhs: R) -> Bool {
        guard lhs.count == rhs.count else { return false }
        // Native strings and byte buffers: compare in place (iterating two generic collections costs more than the
        // comparison itself).
        if let result = lhs.withContiguousStorageIfAvailable({ left in
            rhs.withContiguousStorageIfAvailable { right in equalsIgnoringASCIICase(left, right) }
        }), let result {
            return result
        }
        for (a, b) in zip(lhs, rhs) where a != b {
            guard asciiCaseInsensitiveEqual(a, b) else { return false }
        }
        return true
    }

    @inlinable
    static func equalsIgnoringASCIICase(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in 0..<lhs.count where lhs[index] != rhs[index] {
            guard asciiCaseInsensitiveEqual(lhs[index], rhs[index]) else { return false }
        }
        return true
    }

    /// Whether two different bytes are the same ASCII letter in different case.
    @inlinable
    static func asciiCaseInsensitiveEqual(_ a: UInt8, _ b: UInt8) -> Bool {
        a | 0x20 == b | 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z")
    }
}

extension Substring {
    /// The substring without leading and trailing spaces and horizontal tabs (HTTP's optional whitespace).
    package func trimmingHTTPWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }
}
