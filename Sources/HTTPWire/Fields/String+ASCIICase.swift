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
