/// Adding, replacing and removing fields.
extension HTTPFields {
    // MARK: Adding fields

    /// Appends a field, keeping any existing field of the same name. A name in the table of known names is a token, so
    /// a field whose value has only field-value bytes is marked checked here (see ``checkedFlags(token:value:)``).
    package mutating func add(name: String, value: String) {
        HTTPFields.withBytes(of: name) { nameBytes in
            HTTPFields.withBytes(of: value) { valueBytes in
                let token = HTTPFieldName.lookup(nameBytes)
                append(
                    name: nameBytes, value: valueBytes, token: token,
                    flags: HTTPFields.checkedFlags(token: token, value: valueBytes))
            }
        }
    }

    /// ``add(name:value:)`` for a name known at compile time (`token` must be its token): its bytes are read in place
    /// and not looked up, with no `String` to open.
    package mutating func add(knownName name: StaticString, token: HTTPFieldName, value: String) {
        guard name.hasPointerRepresentation else {
            name.withUTF8Buffer { add(name: UnsafeRawBufferPointer($0), token: token, value: value) }
            return
        }
        add(
            name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), token: token,
            value: value)
    }

    /// Appends a field whose name (`token`'s) and value are static text written by the caller: both read in place,
    /// and the value, field-value bytes by construction, not checked again (the field is marked checked, as
    /// ``add(knownName:token:value:)`` would mark it).
    package mutating func add(knownName name: StaticString, token: HTTPFieldName, staticValue value: StaticString) {
        addValidated(
            name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount),
            value: UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount), token: token)
    }

    /// Appends a field named `name` (whose token is `token`) with the value `value`, flagged as
    /// ``add(name:value:)`` does. The value's bytes are read in place when the string has them contiguous (any native
    /// string), in one closure that appends: the string is not retained around it, as a helper taking the closure
    /// to append would.
    private mutating func add(name: UnsafeRawBufferPointer, token: HTTPFieldName, value: String) {
        // Room is made first, so that the closure only copies bytes.
        makeRoomForOneMore(bytes: name.count &+ value.utf8.count &+ HTTPFieldEntry.separatorCount)
        let added: Void? = value.utf8.withContiguousStorageIfAvailable { valueBytes in
            let valueBytes = UnsafeRawBufferPointer(valueBytes)
            appendInRoom(
                name: name, value: valueBytes, token: token,
                flags: HTTPFields.checkedFlags(token: token, value: valueBytes))
        }
        if added != nil { return }
        Array(value.utf8).withUnsafeBytes { valueBytes in
            append(
                name: name, value: valueBytes, token: token,
                flags: HTTPFields.checkedFlags(token: token, value: valueBytes))
        }
    }

    /// Appends a field named `name` (whose token is `token`, as in ``add(knownName:token:value:)``) with the value of the
    /// field at `index` of `other`, copied as bytes (a value the parser checked stays checked).
    package mutating func add(
        knownName name: StaticString, token: HTTPFieldName, valueOfFieldAt index: Int, of other: HTTPFields
    ) {
        let checked = token != .other && other.isValidated(at: index)
        name.withUTF8Buffer { nameBytes in
            other.withField(at: index) { _, valueBytes in
                append(
                    name: UnsafeRawBufferPointer(nameBytes), value: valueBytes, token: token,
                    flags: checked ? HTTPFieldEntry.validated : HTTPFields.checkedFlags(token: token, value: valueBytes)
                )
            }
        }
    }

    /// The flags of a field added by name: checked (``HTTPFieldEntry/validated``) when the name is in the table (so a
    /// token) and every byte of `value` may appear in a field value (HTTP1Grammar's rule: no CR, LF, NUL or other
    /// control but HTAB); unchecked otherwise, for the serializer to check.
    @inline(__always)
    static func checkedFlags(token: HTTPFieldName, value: UnsafeRawBufferPointer) -> UInt8 {
        guard token != .other else { return 0 }
        guard let base = value.baseAddress else { return HTTPFieldEntry.validated }
        return HTTP1Grammar.areFieldValueBytes(base, count: value.count) ? HTTPFieldEntry.validated : 0
    }

    /// Whether the field at `index` was checked when it was added (see ``addValidated(name:value:token:)``).
    func isValidated(at index: Int) -> Bool {
        withRegions(ifEmpty: false) { entries, _, header in
            index >= 0 && index < header.count && entries[index].flags & HTTPFieldEntry.validated != 0
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
            append(
                name: UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
                value: UnsafeRawBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)),
                token: entry.token, flags: entry.flags)
        }
    }

    /// Appends a field whose name is a token and whose value has only field-value bytes, as the HTTP/1 parsers check
    /// (the serializer then copies it without checking again). `token` is the name's, if the caller knows it.
    package mutating func addValidated(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
        token: HTTPFieldName? = nil
    ) {
        append(name: name, value: value, token: token ?? HTTPFieldName.lookup(name), flags: HTTPFieldEntry.validated)
    }

    /// Appends the field of a line the HTTP/1 parser checked (as ``addValidated(name:value:token:)``): the name is
    /// `line[0..<nameCount]`, the value `line[valueStart..<valueEnd]`, and `token` the name's. The line's bytes up to
    /// the value's end are copied as one run (the colon and the whitespace between name and value come along,
    /// unreferenced), and room is checked in place: one copy and no call per field while the storage has room.
    @inline(__always)
    mutating func appendValidatedLine(
        _ line: UnsafeRawBufferPointer, nameCount: Int, valueStart: Int, valueEnd: Int, token: HTTPFieldName
    ) {
        makeRoomForOneMore(bytes: valueEnd)
        withRegions(ifEmpty: ()) { entries, bytes, header in
            let start = header.byteCount
            let end = HTTPFields.offset(start &+ valueEnd)
            if let base = line.baseAddress, valueEnd > 0 {
                UnsafeMutableRawPointer(bytes + start).copyMemory(from: base, byteCount: valueEnd)
            }
            header.byteCount = Int(end)
            var entry = HTTPFieldEntry(
                nameStart: 0, nameCount: 0, valueStart: 0, valueCount: 0, token: token, flags: HTTPFieldEntry.validated)
            entry.nameStart = UInt32(truncatingIfNeeded: start)
            entry.nameCount = UInt32(truncatingIfNeeded: nameCount)
            entry.valueStart = UInt32(truncatingIfNeeded: start &+ valueStart)
            entry.valueCount = UInt32(truncatingIfNeeded: valueEnd &- valueStart)
            entries[header.count] = entry
            header.count &+= 1
        }
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
            for index in 0..<header.count { needed += entries[index].storedByteCount }
            reserve(entries: count + header.count, bytes: needed)
            // Room for every field was made (in a storage this value alone holds): each is copied without checking.
            for index in 0..<header.count {
                let entry = entries[index]
                appendInRoom(
                    name: UnsafeRawBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
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
                if try shouldRemove(
                    entry.token,
                    UnsafeRawBufferPointer(
                        start: bytes + Int(entry.nameStart),
                        count: Int(entry.nameCount)))
                {
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
                if try shouldRemove(
                    entry.token,
                    UnsafeRawBufferPointer(
                        start: bytes + Int(entry.nameStart),
                        count: Int(entry.nameCount)))
                {
                    continue
                }
                entries[kept] = entry
                kept += 1
            }
            header.count = kept
        }
    }
}
