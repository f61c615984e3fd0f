import Testing

@testable import HTTPWire

/// The word-at-a-time field-value check against the byte-by-byte rule it stands for.
@Suite struct HTTP1GrammarTests {
    /// Every byte value at every position of every length up to 24, in runs of plain letters and of obs-text: the
    /// fast check agrees with `isFieldValueByte` on each.
    @Test func fieldValueCheckAgreesWithTheByteRuleForEveryByteAtEveryPosition() {
        var disagreements: [String] = []
        for filler: UInt8 in [UInt8(ascii: "a"), 0x80, 0xFF, UInt8(ascii: " ")] {
            for length in 1...24 {
                for position in 0..<length {
                    for value in 0...255 {
                        var bytes = [UInt8](repeating: filler, count: length)
                        bytes[position] = UInt8(value)
                        let expected = bytes.allSatisfy(HTTP1Grammar.isFieldValueByte)
                        let actual = bytes.withUnsafeBytes {
                            HTTP1Grammar.areFieldValueBytes($0.baseAddress!, count: length)
                        }
                        if actual != expected {
                            disagreements.append("filler \(filler) length \(length) at \(position): \(value)")
                        }
                    }
                }
            }
        }
        let count = disagreements.count
        #expect(count == 0, "first disagreements: \(disagreements.prefix(5))")
    }

    /// A tab (allowed) early in a value does not hide a forbidden byte later in it, and the reverse.
    @Test func aTabBeforeAForbiddenByteStillFailsTheValue() {
        for (value, valid) in [
            ("a\tb", true), ("\tabcdefghijklmnop", true), ("abcdefgh\tijklmnop\r", false),
            ("abcdefghij\u{7F}", false), ("abcdefghijklmnop\0", false), ("é ü \t ok", true)
        ] {
            let bytes = Array(value.utf8)
            #expect(
                bytes.withUnsafeBytes { HTTP1Grammar.areFieldValueBytes($0.baseAddress!, count: bytes.count) } == valid,
                "\(bytes)")
        }
    }

    /// No byte is read past the count given (the bytes after it would fail the check).
    @Test func theCheckStopsAtTheCount() {
        let bytes = Array("abcdefghijklm\r\n\0".utf8)
        for count in 0...13 {
            #expect(bytes.withUnsafeBytes { HTTP1Grammar.areFieldValueBytes($0.baseAddress!, count: count) })
        }
    }

    /// The word-at-a-time name scan against the byte-by-byte rule it stands for: every byte value at every position of
    /// names up to 20 bytes (and in the colon's place), in lines long and short, gives the same result (where the
    /// name ends, or the same error) as scanning token characters one by one up to the colon.
    @Test func fieldNameScanAgreesWithTheByteRuleForEveryByteAtEveryPosition() {
        var disagreements: [String] = []
        for nameLength in 0...20 {
            for value in ["", "v", "a longer value, past a word"] {
                for position in 0...nameLength {
                    for byte in 0...255 {
                        var line = Array(repeating: UInt8(ascii: "x"), count: nameLength) + [HTTP1Grammar.colon]
                        line += Array(value.utf8)
                        line[position] = UInt8(byte)
                        let expected = Self.referenceNameEnd(line)
                        let actual: String = line.withUnsafeBytes { bytes in
                            switch HTTP1Grammar.parseFieldLineBytes(bytes) {
                            case .success(let field): return "name \(field.nameCount)"
                            case .failure(let error): return error.reason
                            }
                        }
                        if actual != expected {
                            disagreements.append("name \(nameLength) value \(value.count) at \(position): \(byte)")
                        }
                    }
                }
            }
        }
        let count = disagreements.count
        #expect(count == 0, "first disagreements: \(disagreements.prefix(5))")
    }

    /// What the field-line grammar says about a line's name, scanned byte by byte: the name's length, or the reason
    /// of the name's error (for a valid name, the rest of the line is checked as a value by the parser; those errors
    /// are compared too).
    private static func referenceNameEnd(_ line: [UInt8]) -> String {
        guard let first = line.first else { return "empty field line" }
        if first == HTTP1Grammar.sp || first == HTTP1Grammar.htab {
            return "obsolete line folding or leading whitespace in field line"
        }
        var index = 0
        while index < line.count, HTTP1Grammar.isTokenChar(line[index]) { index += 1 }
        guard index < line.count else { return "field line without colon" }
        guard line[index] == HTTP1Grammar.colon else {
            if line[index] == HTTP1Grammar.sp || line[index] == HTTP1Grammar.htab {
                return "whitespace before colon in field line"
            }
            return "invalid character in field name"
        }
        guard index > 0 else { return "empty field name" }
        let value = line[(index + 1)...].drop { $0 == HTTP1Grammar.sp || $0 == HTTP1Grammar.htab }
        return value.allSatisfy(HTTP1Grammar.isFieldValueByte) ? "name \(index)" : "invalid character in field value"
    }

    /// The name's token comes with the parsed line, found ignoring case, and a name not in the table is `other`.
    @Test func aParsedLineCarriesItsNamesToken() {
        for (line, token) in [
            ("Host: a", HTTPFieldName.host), ("CONTENT-LENGTH: 1", .contentLength),
            ("transfer-Encoding: chunked", .transferEncoding), ("X-Custom-Name: v", .other), ("hosts: a", .other)
        ] {
            let bytes = Array(line.utf8)
            let parsed = bytes.withUnsafeBytes { try? HTTP1Grammar.parseFieldLineBytes($0).get() }
            #expect(parsed?.token == token, "\(line)")
        }
    }

    /// The reg-name class is exactly unreserved or sub-delims, for every byte.
    @Test func regNameClassIsUnreservedOrSubDelims() {
        for value in 0...255 {
            let byte = UInt8(value)
            #expect(
                HTTP1Grammar.isRegNameChar(byte) == (HTTP1Grammar.isUnreserved(byte) || HTTP1Grammar.isSubDelim(byte)),
                "byte \(value)")
        }
    }

    /// A CR anywhere in a line but before its LF makes the line invalid; a line without one is its bytes before CRLF.
    @Test func lineContentRefusesACarriageReturnInsideTheLine() {
        for (text, content) in [
            ("GET / HTTP/1.1\r\n", "GET / HTTP/1.1"), ("\r\n", ""), ("a\rb\r\n", nil), ("\r\r\n", nil), ("ab\n", nil)
        ] as [(String, String?)] {
            let bytes = Array(text.utf8)
            let lf = bytes.firstIndex(of: HTTP1Grammar.lf)!
            let found = bytes.withUnsafeBytes { HTTP1Grammar.lineContent($0, lfOffset: lf).map { Array($0) } }
            #expect(found == content.map { Array($0.utf8) }, "\(Array(text.utf8))")
        }
    }

    /// The Host check agrees with the rule written plainly (RFC 3986 reg-name with pct-encoding, IP literal in
    /// brackets, optional port of up to five digits not above 65535) for every byte in each part of a host, and for
    /// the edge cases of ports and escapes.
    @Test func hostCheckAgreesWithThePlainRule() {
        var cases: [[UInt8]] = [
            [], Array("a".utf8), Array("%41".utf8), Array("%4".utf8), Array("%zz".utf8), Array("a%".utf8),
            Array("h:".utf8), Array("h:0".utf8), Array("h:65535".utf8), Array("h:65536".utf8),
            Array("h:123456".utf8), Array("h:12a".utf8), Array("h:99999".utf8), Array("h:00080".utf8),
            Array("[::1]".utf8), Array("[::1]:80".utf8), Array("[]".utf8), Array("[::1".utf8), Array(":80".utf8),
            Array("h::80".utf8), Array("127.0.0.1:18601".utf8), Array("example.com".utf8)
        ]
        for value in 0...255 {
            let byte = UInt8(value)
            cases.append([byte])
            cases.append(Array("ab".utf8) + [byte] + Array("cd".utf8))
            cases.append(Array("ab:8".utf8) + [byte])
            cases.append(Array("[::".utf8) + [byte] + Array("]".utf8))
            cases.append(Array("%4".utf8) + [byte])
        }
        for bytes in cases {
            let checked = bytes.withUnsafeBytes { HTTP1Grammar.isValidHost(bytes: $0) }
            #expect(checked == Self.plainIsValidHost(bytes), "\(bytes)")
        }
    }

    /// The Host rule of ``HTTP1Grammar/isValidHost(bytes:)``, byte by byte.
    private static func plainIsValidHost(_ bytes: [UInt8]) -> Bool {
        var index = 0
        if bytes.first == 0x5B {
            index = 1
            while index < bytes.count, bytes[index] != 0x5D {
                let byte = bytes[index]
                guard
                    HTTP1Grammar.hexValue(byte) != nil || byte == 0x3A || byte == 0x2E
                        || HTTP1Grammar.isUnreserved(byte) || HTTP1Grammar.isSubDelim(byte)
                else { return false }
                index += 1
            }
            guard index < bytes.count, index > 1 else { return false }
            index += 1
        } else {
            while index < bytes.count, bytes[index] != 0x3A {
                let byte = bytes[index]
                if byte == 0x25 {
                    guard index + 2 < bytes.count, HTTP1Grammar.hexValue(bytes[index + 1]) != nil,
                        HTTP1Grammar.hexValue(bytes[index + 2]) != nil
                    else { return false }
                    index += 3
                    continue
                }
                guard HTTP1Grammar.isUnreserved(byte) || HTTP1Grammar.isSubDelim(byte) else { return false }
                index += 1
            }
        }
        if index == bytes.count { return true }
        guard bytes[index] == 0x3A else { return false }
        let port = bytes[(index + 1)...]
        if port.isEmpty { return true }
        guard port.count <= 5, let number = HTTP1Grammar.parseDecimal(port), number <= 65535 else { return false }
        return true
    }
}
