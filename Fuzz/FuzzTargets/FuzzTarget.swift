/// One coverage-guided fuzz target: a function run once per input, which throws ``FuzzFailure`` when an invariant
/// does not hold. A crash or sanitizer report inside it is a failure too (libFuzzer records the input).
///
/// Built by `scripts/fuzz.sh` (`-sanitize=fuzzer,address`), `MoyaFuzz TARGET` runs a target under libFuzzer; built
/// normally, `MoyaFuzz TARGET FILE...` runs each file once (a regression replay), and `FuzzCorpusTests` replays every
/// committed corpus in `swift test`. docs/fuzzing.md says how to run and extend them.
package struct FuzzTarget: Sendable {
    /// The name on the command line and of the corpus folder (`Fuzz/corpus/NAME`).
    package let name: String
    /// What is fuzzed and what is checked, for `MoyaFuzz --list`.
    package let summary: String
    /// libFuzzer's `-max_len`: inputs beyond it add little and slow the run down.
    package let maxLength: Int
    /// A libFuzzer dictionary in `Fuzz/dictionaries`, if any.
    package let dictionary: String?
    /// Runs one input.
    private let function: @Sendable (UnsafeRawBufferPointer) throws(FuzzFailure) -> Void

    package init(
        name: String, summary: String, maxLength: Int, dictionary: String?,
        run: @escaping @Sendable (UnsafeRawBufferPointer) throws(FuzzFailure) -> Void
    ) {
        self.name = name
        self.summary = summary
        self.maxLength = maxLength
        self.dictionary = dictionary
        self.function = run
    }

    /// Runs one input.
    package func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        try function(bytes)
    }

    /// Runs one input given as an array.
    package func run(_ bytes: [UInt8]) throws(FuzzFailure) {
        let result: Result<Void, FuzzFailure> = bytes.withUnsafeBytes { raw in
            do throws(FuzzFailure) {
                try function(raw)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }
}

/// Every fuzz target, in the order `scripts/fuzz.sh --brief` runs them.
package enum FuzzTargets {
    package static let all: [FuzzTarget] = [
        HTTP1RequestTarget.target,
        HTTP1ResponseTarget.target,
        HTTP1ChunkedTarget.target,
        HTTP2FieldsTarget.target,
        HTTP2SessionTarget.target,
        HTTP2ResponseTarget.target,
        PathTarget.target,
        RoutingTarget.target,
        URLTarget.target,
        SizeDurationTarget.target,
        ConfigTarget.target
    ]

    package static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// An invariant that did not hold for an input.
package struct FuzzFailure: Error, Sendable, CustomStringConvertible {
    package var message: String
    package var location: String

    package var description: String { "\(location): invariant failed: \(message)" }
}

/// Throws ``FuzzFailure`` with `message` unless `condition` holds.
@inline(__always)
func check(
    _ condition: Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message: message(), location: "\(file):\(line)") }
}

/// A ``FuzzFailure`` to throw.
func failure(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> FuzzFailure {
    FuzzFailure(message: message, location: "\(file):\(line)")
}

/// Byte helpers shared by the targets.
enum FuzzBytes {
    /// Splits `count` bytes into consecutive pieces whose lengths come from a generator seeded with the bytes
    /// themselves: the same input always splits the same way (so a failure reproduces), and different inputs split
    /// differently (single bytes, a few bytes, whole lines, kilobytes).
    static func pieces(of bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        var state = seed(bytes)
        var ranges: [Range<Int>] = []
        var start = 0
        while start < bytes.count {
            state = next(state)
            let scale = [1, 4, 32, 1024][Int(state >> 60) & 3]
            let length = 1 + Int((state >> 16) % UInt64(scale))
            let end = min(bytes.count, start + length)
            ranges.append(start..<end)
            start = end
        }
        return ranges
    }

    /// FNV-1a over the bytes, never zero (the xorshift state must not be).
    static func seed(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash == 0 ? 1 : hash
    }

    /// xorshift64.
    static func next(_ state: UInt64) -> UInt64 {
        var x = state
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        return x
    }

    /// RFC 9110 `tchar`, written here independently of the parsers it checks.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func isToken(_ text: String) -> Bool {
        !text.utf8.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// A field value as the HTTP/1.1 parsers hand it out: no CR, LF, NUL or other control except HTAB, and no
    /// leading or trailing space or HTAB (optional whitespace is not part of the value).
    static func isCleanFieldValue(_ value: String) -> Bool {
        let bytes = value.utf8
        guard bytes.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else { return false }
        guard let first = bytes.first, let last = bytes.last else { return true }
        return first != 0x20 && first != 0x09 && last != 0x20 && last != 0x09
    }

    /// Splits `bytes` at every `separator`, keeping empty pieces.
    static func split(_ bytes: UnsafeRawBufferPointer, separator: UInt8) -> [UnsafeRawBufferPointer] {
        var parts: [UnsafeRawBufferPointer] = []
        var start = 0
        for index in 0..<bytes.count where bytes[index] == separator {
            parts.append(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
            start = index + 1
        }
        parts.append(UnsafeRawBufferPointer(rebasing: bytes[start...]))
        return parts
    }

    static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

extension FuzzBytes {
    /// The value of a non-empty string of ASCII digits (leading zeros allowed), nil for anything else or past Int64.
    static func decimalValue(_ text: String) -> Int64? {
        guard !text.utf8.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var value: Int64 = 0
        for digit in text.utf8 {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(digit - 0x30))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }
}

extension FuzzBytes {
    /// The fewest bytes `text` can have come from: the parsers decode bytes that are not UTF-8 to U+FFFD (three
    /// bytes) each, so it counts one for each U+FFFD.
    static func wireCount(_ text: String) -> Int {
        text.utf8.count - 2 * text.unicodeScalars.reduce(0) { $1 == "\u{FFFD}" ? $0 + 1 : $0 }
    }
}

/// Byte-level string tests. The targets work on bytes, while `String`'s own `hasPrefix`, `contains` and `split`
/// compare grapheme clusters: a `/` followed by a combining mark is not a `/` to them.
extension FuzzBytes {
    static func hasPrefix(_ text: String, _ prefix: String) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }

    static func contains(_ text: String, byte: UInt8) -> Bool {
        text.utf8.contains(byte)
    }

    static func contains(_ text: String, _ needle: String) -> Bool {
        let haystack = Array(text.utf8)
        let needle = Array(needle.utf8)
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }

    /// `text` before and after its first `byte`; nil after when there is none.
    static func split(_ text: String, atFirst byte: UInt8) -> (before: String, after: String?) {
        let bytes = Array(text.utf8)
        guard let index = bytes.firstIndex(of: byte) else { return (text, nil) }
        return (
            String(decoding: bytes[..<index], as: UTF8.self), String(decoding: bytes[(index + 1)...], as: UTF8.self)
        )
    }

    /// ASCII letters lower-cased, everything else as it is.
    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
