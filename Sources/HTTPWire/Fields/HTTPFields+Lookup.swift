/// Finding fields by name, and the tokens of list-valued fields.
extension HTTPFields {
    // MARK: Lookup

    /// Whether a field named `name` is present.
    package func contains(name: String) -> Bool {
        firstIndex(name: name) != nil
    }

    /// The token of the name `name` (``HTTPFieldName/other`` for a name not in the table): looked up once, for a
    /// name compared with many fields.
    package static func token(of name: String) -> HTTPFieldName {
        withBytes(of: name) { HTTPFieldName.lookup($0) }
    }

    /// The position of the first field at or after `start` whose name is the known name `token` (one byte compared
    /// per field); nil for ``HTTPFieldName/other``, which names no single field.
    ///
    /// Inlinable, so that a caller in another module scans the entries itself (one byte compared per field) instead of
    /// calling here.
    @inlinable
    public func firstIndex(token: HTTPFieldName, from start: Int = 0) -> Int? {
        guard token != .other else { return nil }
        return withRegions(ifEmpty: nil) { entries, _, header -> Int? in
            var index = Swift.max(start, 0)
            while index < header.count {
                if entries[index].token == token { return index }
                index &+= 1
            }
            return nil
        }
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

    /// The value of the first field whose name is the known name `token` (no lookup of a name's bytes).
    package func first(_ token: HTTPFieldName) -> String? {
        firstIndex(token: token).map { value(at: $0) }
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
            containsToken(token, nameToken: HTTPFieldName.lookup(nameBytes), nameBytes: nameBytes)
        }
    }

    /// ``containsToken(_:name:)`` for a known name, given as its token (no name bytes to open and look up): whether
    /// the list-valued field `name` contains `token`, ignoring ASCII case. False for ``HTTPFieldName/other``.
    package func containsToken(_ token: String, in name: HTTPFieldName) -> Bool {
        guard name != .other, !isEmpty else { return false }
        return containsToken(token, nameToken: name, nameBytes: UnsafeRawBufferPointer(start: nil, count: 0))
    }

    private func containsToken(
        _ token: String, nameToken: HTTPFieldName, nameBytes: UnsafeRawBufferPointer
    ) -> Bool {
        // Most often no field has the name: the token's bytes are then never opened.
        guard var found = firstIndex(token: nameToken, bytes: nameBytes, from: 0) else { return false }
        return HTTPFields.withBytes(of: token) { tokenBytes in
            while true {
                if withField(at: found, { _, value in HTTPFields.list(value, contains: tokenBytes) }) {
                    return true
                }
                guard let next = firstIndex(token: nameToken, bytes: nameBytes, from: found + 1) else {
                    return false
                }
                found = next
            }
        }
    }

    /// Whether the comma-separated `list` has a non-empty element equal to `token` (ignoring ASCII case) once trimmed
    /// of optional whitespace; scans the bytes without splitting.
    static func list(_ list: String, contains token: String) -> Bool {
        withBytes(of: list) { listBytes in withBytes(of: token) { HTTPFields.list(listBytes, contains: $0) } }
    }

    /// ``list(_:contains:)`` on bytes: whether the comma-separated `bytes` have an element equal to `token`.
    package static func list(_ bytes: UnsafeRawBufferPointer, contains token: UnsafeRawBufferPointer) -> Bool {
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
                if lower < upper,
                    HTTPFields.equalsIgnoringASCIICase(UnsafeRawBufferPointer(rebasing: bytes[lower..<upper]), token)
                {
                    return true
                }
                if atEnd { return false }
                elementStart = index + 1
            }
            index += 1
        }
    }
}
