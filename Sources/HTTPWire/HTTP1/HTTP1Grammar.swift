#if canImport(Glibc)
import Glibc
#endif

/// Byte classes and small grammar rules of RFC 9110 / RFC 9112 shared by the HTTP/1 parsers and serializer.
///
/// Everything here works on raw bytes, never traps, and allocates only for the final strings.
package enum HTTP1Grammar {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// `tchar` (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters.
    @inline(__always)
    package static func isTokenChar(_ byte: UInt8) -> Bool {
        isInClass(byte, low: 0x03ff_6cfa_0000_0000, high: 0x57ff_ffff_c7ff_fffe)
    }

    /// Whether `byte` is in an ASCII class given as a bit per byte: `low` for bytes 0–63, `high` for 64–127. No byte
    /// from 128 up is.
    @inline(__always)
    static func isInClass(_ byte: UInt8, low: UInt64, high: UInt64) -> Bool {
        if byte < 64 { return (low >> UInt64(byte)) & 1 == 1 }
        if byte < 128 { return (high >> UInt64(byte &- 64)) & 1 == 1 }
        return false
    }

    /// A byte allowed inside a field value: HTAB, SP, VCHAR, obs-text (0x80-0xFF). Excludes CR, LF, NUL, other
    /// controls and DEL.
    @inline(__always)
    package static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == htab || (byte >= 0x20 && byte != 0x7F)
    }

    /// Whether every one of `count` bytes at `base` may appear in a field value (see ``isFieldValueByte(_:)``). Eight
    /// bytes are tested at a time while none of them is a control byte or DEL (the last fewer than eight as the word
    /// that ends the run, overlapping the one before); from the first word that has one (an HTAB, which is allowed,
    /// or a byte that is not), the rest is tested byte by byte.
    @inline(__always)
    static func areFieldValueBytes(_ base: UnsafeRawPointer, count: Int) -> Bool {
        var index = 0
        while index &+ 8 <= count, !hasControlByte(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
            index &+= 8
        }
        if index == count { return true }
        if index &+ 8 > count {
            if count >= 8, !hasControlByte(base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)) {
                return true
            }
            // Four to seven bytes: two overlapping halves tested as one word.
            if count >= 4, count < 8,
                !hasControlByte(
                    UInt64(base.loadUnaligned(as: UInt32.self))
                        | UInt64(base.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)) << 32)
            {
                return true
            }
        }
        while index < count {
            guard isFieldValueByte(base.load(fromByteOffset: index, as: UInt8.self)) else { return false }
            index += 1
        }
        return true
    }

    /// Whether some byte of `word` is below 0x20 or is 0x7F (the exact existence tests "has less than" and "has zero"
    /// from Sean Eron Anderson's Bit Twiddling Hacks; bytes of 0x80 and above never count).
    @inline(__always)
    static func hasControlByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let below0x20 = (word &- ones &* 0x20) & ~word & highBits
        let del = word ^ (ones &* 0x7F)
        let isDel = (del &- ones) & ~del & highBits
        return below0x20 | isDel != 0
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte &- 0x30
        case 0x41...0x46: return byte &- 0x41 &+ 10
        case 0x61...0x66: return byte &- 0x61 &+ 10
        default: return nil
        }
    }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// Whether every byte is a `tchar` and there is at least one.
    package static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && allBytes(bytes, isTokenChar)
    }

    /// Whether `test` holds for every byte: over contiguous bytes (any native string's) when there are, which the
    /// generic `allSatisfy` over a `String.UTF8View` is not.
    @inline(__always)
    package static func allBytes(_ bytes: some Collection<UInt8>, _ test: (UInt8) -> Bool) -> Bool {
        if let result = bytes.withContiguousStorageIfAvailable({ buffer -> Bool in
            for byte in buffer where !test(byte) { return false }
            return true
        }) {
            return result
        }
        return bytes.allSatisfy(test)
    }

    /// Whether `bytes` equals the lowercase ASCII `lower`, ignoring ASCII case.
    static func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        return lower.withUTF8Buffer { expected in
            for index in 0..<expected.count where lowercased(bytes[index]) != expected[index] { return false }
            return true
        }
    }

    static func equalsLowercase<C: Collection>(_ bytes: C, _ lower: StaticString) -> Bool where C.Element == UInt8 {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        return lower.withUTF8Buffer { expected in
            var index = 0
            for byte in bytes {
                if lowercased(byte) != expected[index] { return false }
                index += 1
            }
            return true
        }
    }

    /// A decimal `1*DIGIT` value such as a Content-Length: nil if empty, if any byte is not a digit (signs, spaces,
    /// hex, `_`), or if it does not fit in `Int64`.
    static func parseDecimal<C: Collection>(_ bytes: C) -> Int64? where C.Element == UInt8 {
        guard !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in bytes {
            guard isDigit(byte) else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int64(byte &- 0x30))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are exactly the UTF-8 bytes of `string` (case-sensitive), compared in place.
    static func equals(_ bytes: UnsafeRawBufferPointer, _ string: StaticString) -> Bool {
        guard bytes.count == string.utf8CodeUnitCount else { return false }
        guard let base = bytes.baseAddress else { return true }
        return memcmp(base, string.utf8Start, bytes.count) == 0
    }

    // MARK: Lines

    /// Finds the next LF in `bytes`, starting the search at `scanned` and remembering how far it looked so that a
    /// line arriving in many pieces is scanned once. Returns the LF's offset.
    @inline(__always)
    static func findLineFeed(_ bytes: UnsafeRawBufferPointer, scanned: inout Int) -> Int? {
        let count = bytes.count
        if scanned < count, let base = bytes.baseAddress,
            let found = memchr(base + scanned, Int32(lf), count - scanned)
        {
            scanned = 0
            return base.distance(to: UnsafeRawPointer(found))
        }
        scanned = count
        return nil
    }

    /// The content of a complete line whose LF is at `lfOffset`: the bytes before CR LF. Fails for a bare LF and for
    /// a CR anywhere else in the line.
    static func lineContent(_ bytes: UnsafeRawBufferPointer, lfOffset: Int) -> UnsafeRawBufferPointer? {
        guard lfOffset >= 1, bytes[lfOffset - 1] == cr else { return nil }
        let content = UnsafeRawBufferPointer(rebasing: bytes[0..<(lfOffset - 1)])
        if let base = content.baseAddress, !content.isEmpty, memchr(base, Int32(cr), content.count) != nil {
            return nil
        }
        return content
    }

    // MARK: Field lines

    enum FieldKind: Sendable {
        case other, contentLength, transferEncoding, host

        /// The kind of a field whose name has the token `token`.
        init(_ token: HTTPFieldName) {
            switch token {
            case .host: self = .host
            case .contentLength: self = .contentLength
            case .transferEncoding: self = .transferEncoding
            default: self = .other
            }
        }
    }

    struct FieldLine: Sendable {
        var name: String
        var value: String
        var kind: FieldKind
        /// Whether whitespace followed the value (trimmed from `value`).
        var hadTrailingWhitespace: Bool
    }

    /// Parses `field-name ":" OWS field-value OWS` (RFC 9112 §5), the line without its CRLF.
    /// Rejects obs-fold and leading whitespace, whitespace before the colon, non-token names, missing colons and
    /// controls other than HTAB in the value. obs-text is kept; invalid UTF-8 becomes U+FFFD in the `String`.
    static func parseFieldLine(_ line: UnsafeRawBufferPointer) -> Result<FieldLine, HTTP1ParseError> {
        var interner = HTTP1FieldInterner()
        return parseFieldLine(line, interner: &interner)
    }

    /// ``parseFieldLine(_:)`` taking long names and values from `interner` when it has seen the same bytes.
    static func parseFieldLine(
        _ line: UnsafeRawBufferPointer, interner: inout HTTP1FieldInterner
    ) -> Result<FieldLine, HTTP1ParseError> {
        switch parseFieldLineBytes(line) {
        case .failure(let error):
            return .failure(error)
        case .success(let field):
            return .success(
                FieldLine(
                    name: interner.string(field.name(in: line)),
                    value: interner.string(field.value(in: line)),
                    kind: field.kind,
                    hadTrailingWhitespace: field.hadTrailingWhitespace
                ))
        }
    }

    /// Where a field line's name and value lie in the line, with what ``parseFieldLine(_:)`` also tells.
    struct FieldLineBytes: Sendable {
        /// The name is `line[0..<nameCount]`, the value `line[valueStart..<valueEnd]` (optional whitespace trimmed).
        var nameCount: Int
        var valueStart: Int
        var valueEnd: Int
        /// The name's token (``HTTPFieldName/other`` for a name not in the table).
        var token: HTTPFieldName
        var hadTrailingWhitespace: Bool

        var kind: FieldKind { FieldKind(token) }

        func name(in line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: line[0..<nameCount])
        }

        func value(in line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd])
        }
    }

    /// ``parseFieldLine(_:)`` without making strings: the same checks, and where the name and value are.
    @inline(__always)
    static func parseFieldLineBytes(_ line: UnsafeRawBufferPointer) -> Result<FieldLineBytes, HTTP1ParseError> {
        guard let first = line.first else { return .failure(.badRequest("empty field line")) }
        if first == sp || first == htab {
            return .failure(.badRequest("obsolete line folding or leading whitespace in field line"))
        }
        // The name runs to the first byte that is not a token character, which must be the colon (the colon, not a
        // token character, ends it like any other). Eight bytes at a time while they are letters, digits and `-` up
        // to a colon; from the first word that is not, byte by byte.
        var colonIndex = scanCommonName(line)
        while colonIndex < line.count, isTokenChar(line[colonIndex]) { colonIndex += 1 }
        guard colonIndex < line.count else { return .failure(.badRequest("field line without colon")) }
        let stop = line[colonIndex]
        guard stop == colon else {
            if stop == sp || stop == htab { return .failure(.badRequest("whitespace before colon in field line")) }
            return .failure(.badRequest("invalid character in field name"))
        }
        guard colonIndex > 0 else { return .failure(.badRequest("empty field name")) }
        var start = colonIndex + 1
        var end = line.count
        while start < end, line[start] == sp || line[start] == htab { start += 1 }
        var trailing = false
        while end > start, line[end - 1] == sp || line[end - 1] == htab {
            end -= 1
            trailing = true
        }
        if start < end, let base = line.baseAddress, !areFieldValueBytes(base + start, count: end - start) {
            return .failure(.badRequest("invalid character in field value"))
        }
        let token = HTTPFieldName.lookup(UnsafeRawBufferPointer(rebasing: line[0..<colonIndex]))
        return .success(
            FieldLineBytes(
                nameCount: colonIndex, valueStart: start, valueEnd: end, token: token,
                hadTrailingWhitespace: trailing))
    }

    /// The field line starting at `lineStart` of `bytes` when it is a common one, found and checked in one pass: a
    /// name of token characters, a colon, optional spaces or tabs, a value without any control byte (no HTAB), then
    /// CR LF, all within `bytes`. Returns the field as ``parseFieldLineBytes(_:)`` gives it for the line without its
    /// CR LF (offsets from `lineStart`), and the line's length with CR LF. nil for any other line (an empty one, one
    /// not complete in `bytes`, one with a tab or another control byte in its value, or one that is not valid): the
    /// caller reads those through ``findLineFeed(_:scanned:)`` and ``parseFieldLineBytes(_:)``, which decide them.
    ///
    /// Every line this accepts is one the general path accepts with the same result: its first LF is the one right
    /// after the CR that ends the value (no byte before it is a control byte), and the checks are the same.
    @inline(__always)
    static func scanCommonFieldLine(
        _ bytes: UnsafeRawBufferPointer, from lineStart: Int
    ) -> (field: FieldLineBytes, lineLength: Int)? {
        guard let buffer = bytes.baseAddress, lineStart < bytes.count else { return nil }
        let base = buffer + lineStart
        let count = bytes.count &- lineStart
        let first = base.load(as: UInt8.self)
        guard first != sp, first != htab else { return nil }
        let rest = UnsafeRawBufferPointer(start: base, count: count)
        var colonIndex = scanCommonName(rest)
        while colonIndex < count, isTokenChar(base.load(fromByteOffset: colonIndex, as: UInt8.self)) {
            colonIndex &+= 1
        }
        guard colonIndex > 0, colonIndex < count, base.load(fromByteOffset: colonIndex, as: UInt8.self) == colon
        else { return nil }
        var valueStart = colonIndex &+ 1
        while valueStart < count {
            let byte = base.load(fromByteOffset: valueStart, as: UInt8.self)
            guard byte == sp || byte == htab else { break }
            valueStart &+= 1
        }
        // The first control byte (or DEL) after the value's start: eight bytes at a time, then byte by byte near the
        // end of the bytes.
        var stop = valueStart
        var found = false
        while stop &+ 8 <= count {
            let mask = controlBytes(base.loadUnaligned(fromByteOffset: stop, as: UInt64.self))
            if mask != 0 {
                stop &+= mask.trailingZeroBitCount &>> 3
                found = true
                break
            }
            stop &+= 8
        }
        if !found {
            while stop < count {
                let byte = base.load(fromByteOffset: stop, as: UInt8.self)
                if byte < 0x20 || byte == 0x7F {
                    found = true
                    break
                }
                stop &+= 1
            }
        }
        guard found, stop &+ 1 < count, base.load(fromByteOffset: stop, as: UInt8.self) == cr,
            base.load(fromByteOffset: stop &+ 1, as: UInt8.self) == lf
        else { return nil }
        // Trailing whitespace (only spaces here: a tab stopped the scan).
        var valueEnd = stop
        while valueEnd > valueStart, base.load(fromByteOffset: valueEnd &- 1, as: UInt8.self) == sp { valueEnd &-= 1 }
        let token = HTTPFieldName.lookup(UnsafeRawBufferPointer(start: base, count: colonIndex))
        return (
            FieldLineBytes(
                nameCount: colonIndex, valueStart: valueStart, valueEnd: valueEnd, token: token,
                hadTrailingWhitespace: valueEnd != stop),
            stop &+ 2
        )
    }

    /// The high bit of each byte of `word` that is below 0x20 or is 0x7F, exact from the lowest such byte up to the
    /// first one (a borrow only runs upward from a byte that counts), so its trailing zero bits locate the first.
    @inline(__always)
    static func controlBytes(_ word: UInt64) -> UInt64 {
        let word = UInt64(littleEndian: word)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let below0x20 = (word &- ones &* 0x20) & ~word & highBits
        let del = word ^ (ones &* 0x7F)
        let isDel = (del &- ones) & ~del & highBits
        return below0x20 | isDel
    }

    /// How many leading bytes of `line` are known to be name bytes before its colon: a multiple of eight (whole words
    /// of letters, digits and `-`) or, when the word holding the first colon has only those before it, the colon's
    /// offset. The byte loop of ``parseFieldLineBytes(_:)`` goes on from there (at the colon, it stops at once).
    @inline(__always)
    static func scanCommonName(_ line: UnsafeRawBufferPointer) -> Int {
        guard let base = line.baseAddress else { return 0 }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index &+ 8 <= line.count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            // A byte of 0x80 or above is no token character: the byte loop decides.
            if word & highBits != 0 { return index }
            // The high bit of each byte that is a letter, a digit or `-`, and of each colon (the ranges' tests are
            // exact for bytes below 0x80: no carry crosses a byte).
            let lower = word | (ones &* 0x20)
            let letter = (lower &+ ones &* (0x80 - 0x61)) & ~(lower &+ ones &* (0x7F - 0x7A))
            let digit = (word &+ ones &* (0x80 - 0x30)) & ~(word &+ ones &* (0x7F - 0x39))
            let dash = (word &+ ones &* (0x80 - 0x2D)) & ~(word &+ ones &* (0x7F - 0x2D))
            let colonByte = (word &+ ones &* (0x80 - 0x3A)) & ~(word &+ ones &* (0x7F - 0x3A))
            let common = (letter | digit | dash) & highBits
            let colons = colonByte & highBits
            if colons != 0 {
                // The first colon's offset in the word; the bytes before it must all be common name bytes.
                let offset = colons.trailingZeroBitCount >> 3
                let before = (UInt64(1) << UInt64(offset << 3)) &- 1
                return common & before & highBits == before & highBits ? index &+ offset : index
            }
            if common != highBits { return index }
            index &+= 8
        }
        return index
    }

    // MARK: Chunk size lines

    /// Parses `chunk-size [ chunk-ext ]` (RFC 9112 §7.1), the line without its CRLF: 1 to 16 hex digits, then only
    /// `;name[=token|quoted-string]` extensions with no whitespace. Returns nil for anything else or a size above
    /// `Int64.max`.
    static func parseChunkSizeLine(_ line: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        var size: UInt64 = 0
        while index < line.count, let digit = hexValue(line[index]) {
            guard index < 16 else { return nil }
            size = size << 4 | UInt64(digit)
            index += 1
        }
        guard index > 0, size <= UInt64(Int64.max) else { return nil }
        while index < line.count {
            guard line[index] == 0x3B else { return nil }  // ";"
            index += 1
            let nameStart = index
            while index < line.count, isTokenChar(line[index]) { index += 1 }
            guard index > nameStart else { return nil }
            guard index < line.count, line[index] == 0x3D else { continue }  // "="
            index += 1
            if index < line.count, line[index] == 0x22 {  // quoted-string
                index += 1
                var closed = false
                while index < line.count {
                    let byte = line[index]
                    if byte == 0x22 {
                        closed = true
                        index += 1
                        break
                    }
                    if byte == 0x5C {  // quoted-pair
                        guard index + 1 < line.count, isFieldValueByte(line[index + 1]) else { return nil }
                        index += 2
                        continue
                    }
                    guard isFieldValueByte(byte) else { return nil }
                    index += 1
                }
                guard closed else { return nil }
            } else {
                let valueStart = index
                while index < line.count, isTokenChar(line[index]) { index += 1 }
                guard index > valueStart else { return nil }
            }
        }
        return Int64(size)
    }
}
