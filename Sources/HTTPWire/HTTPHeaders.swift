/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Names keep the spelling they arrived with; comparisons ignore ASCII case. Repeated fields stay separate entries,
/// in order, so nothing a peer sent is merged or lost.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
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

    // Visible to inlinable code: callers in other modules iterate, add and look up fields without a call per field
    // and without copying each field out through an opaque iterator.
    @usableFromInline var fields: [Field]

    /// Creates headers from `(name, value)` pairs, in order.
    @inlinable
    public init(_ pairs: [(String, String)] = []) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    @inlinable
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of fields, repeated names counted separately.
    @inlinable
    public var count: Int { fields.count }

    @inlinable
    public var isEmpty: Bool { fields.isEmpty }

    @inlinable
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Reserves room for `capacity` fields.
    @inlinable
    public mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    /// Appends a field, keeping any existing field of the same name.
    @inlinable
    public mutating func add(name: __owned String, value: __owned String) {
        fields.append(Field(name: name, value: value))
    }

    /// Appends a field as it is (one taken from another list keeps its strings, without copying them again).
    @inlinable
    public mutating func add(_ field: __owned Field) {
        fields.append(field)
    }

    /// Replaces every field named `name` with one field holding `value`, at the position of the first.
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { $0.name.equalsIgnoringASCIICase(name) }) {
            fields[first].value = value
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if fields[index].name.equalsIgnoringASCIICase(name) {
                    fields.remove(at: index)
                } else {
                    index = fields.index(after: index)
                }
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Appends `other`'s fields, in order, keeping every existing field.
    @inlinable
    public mutating func append(contentsOf other: HTTPHeaders) {
        fields.append(contentsOf: other.fields)
    }

    /// Removes every field whose name `other` has (ignoring ASCII case), then appends `other`'s fields in order:
    /// `other` replaces what it names, repeated fields included, and leaves the rest alone.
    public mutating func replaceOrAdd(_ other: HTTPHeaders) {
        if fields.isEmpty {
            fields = other.fields
            return
        }
        fields.removeAll { field in other.fields.contains { $0.name.equalsIgnoringASCIICase(field.name) } }
        fields.append(contentsOf: other.fields)
    }

    /// Removes every field named `name`.
    @inlinable
    public mutating func remove(name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Whether a field named `name` is present.
    @inlinable
    public func contains(name: String) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Whether a field named `name` has a value for which `predicate` is true (the fields are not copied).
    @inlinable
    public func contains(name: String, where predicate: (String) -> Bool) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) && predicate($0.value) }
    }

    /// The value of the first field named `name`.
    @inlinable
    public func first(name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// The values of every field named `name`, in order.
    public subscript(name: String) -> [String] {
        fields.compactMap { $0.name.equalsIgnoringASCIICase(name) ? $0.value : nil }
    }

    /// The comma-separated elements of every field named `name` (for list-valued fields such as `Connection`),
    /// trimmed of optional whitespace, empty elements dropped.
    public func tokens(name: String) -> [Substring] {
        self[name].flatMap { value in
            value.split(separator: ",").map { $0.trimmingHTTPWhitespace() }.filter { !$0.isEmpty }
        }
    }

    /// Whether the list-valued field `name` contains `token`, ignoring ASCII case.
    public func containsToken(_ token: String, name: String) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) && HTTPHeaders.list($0.value, contains: token) }
    }

    /// Whether the comma-separated `list` has a non-empty element equal to `token` (ignoring ASCII case) once trimmed
    /// of optional whitespace; scans the bytes without splitting.
    static func list(_ list: String, contains token: String) -> Bool {
        let bytes = list.utf8
        var elementStart = bytes.startIndex
        var index = bytes.startIndex
        while true {
            let atEnd = index == bytes.endIndex
            if atEnd || bytes[index] == UInt8(ascii: ",") {
                var lower = elementStart
                var upper = index
                while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") {
                    lower = bytes.index(after: lower)
                }
                while lower < upper {
                    let last = bytes[bytes.index(before: upper)]
                    guard last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") else { break }
                    upper = bytes.index(before: upper)
                }
                if lower < upper, String.equalsIgnoringASCIICase(bytes[lower..<upper], token.utf8) { return true }
                if atEnd { return false }
                elementStart = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}

extension String {
    /// ASCII case-insensitive equality, the comparison HTTP uses for field names and tokens.
    @inlinable
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
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
    public func trimmingHTTPWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }
}
