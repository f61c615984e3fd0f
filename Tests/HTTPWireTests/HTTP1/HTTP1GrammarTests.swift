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
}
