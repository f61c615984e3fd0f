import HTTPWire
import Locking

/// A request as a stub upstream sees it: what the upstream would get after the route's `rewrite` (method, path and
/// query), the client's headers, the collected body, and the gateway's request id. Matching and templates read it.
struct StubRequest: Sendable {
    let method: HTTPMethod
    /// The origin-form target the upstream would get: path and query.
    let target: String
    /// How many UTF-8 bytes of ``target`` are the path (the rest, after `?`, the query).
    private let pathLength: Int
    let headers: HTTPFields
    let body: [UInt8]
    let requestID: String
    /// `target`: origin-form path and query (`/users/7?verbose=1`).
    init(method: HTTPMethod, target: String, headers: HTTPFields, body: [UInt8], requestID: String) {
        self.method = method
        self.target = target
        let mark =
            target.utf8.withContiguousStorageIfAvailable { $0.firstIndex(of: UInt8(ascii: "?")) }
            ?? target.utf8.firstIndex(of: UInt8(ascii: "?")).map {
                target.utf8.distance(from: target.utf8.startIndex, to: $0)
            }
        pathLength = mark ?? target.utf8.count
        self.headers = headers
        self.body = body
        self.requestID = requestID
    }

    /// Whether the target has a query (`?`, even an empty one).
    var hasQuery: Bool { pathLength < target.utf8.count }

    /// The path the upstream would get, without the query.
    var path: Substring {
        let utf8 = target.utf8
        return target[..<utf8.index(utf8.startIndex, offsetBy: pathLength)]
    }

    /// The query without `?`, as sent; nil without one.
    var query: Substring? {
        guard hasQuery else { return nil }
        let utf8 = target.utf8
        return target[utf8.index(utf8.startIndex, offsetBy: pathLength + 1)...]
    }

    /// The path's UTF-8, handed to `body` without a copy (the target is a native string).
    func withPathBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let length = pathLength
        if let result = target.utf8.withContiguousStorageIfAvailable({
            body(UnsafeBufferPointer(rebasing: $0[..<length]))
        }) {
            return result
        }
        return Array(target.utf8.prefix(length)).withUnsafeBufferPointer(body)
    }
}

/// Where a path's `{parameters}` are (UTF-8 offsets, in order): the first four held inline, so that a request's
/// parameters take no allocation.
struct StubPathParameters: Sendable, Equatable, ExpressibleByArrayLiteral {
    private var inline: (Range<Int>, Range<Int>, Range<Int>, Range<Int>) = (0..<0, 0..<0, 0..<0, 0..<0)
    private var more: [Range<Int>] = []
    private(set) var count = 0

    init() {}

    init(arrayLiteral ranges: Range<Int>...) {
        for range in ranges { append(range) }
    }

    mutating func append(_ range: Range<Int>) {
        switch count {
        case 0: inline.0 = range
        case 1: inline.1 = range
        case 2: inline.2 = range
        case 3: inline.3 = range
        default: more.append(range)
        }
        count += 1
    }

    subscript(position: Int) -> Range<Int>? {
        guard position >= 0, position < count else { return nil }
        switch position {
        case 0: return inline.0
        case 1: return inline.1
        case 2: return inline.2
        case 3: return inline.3
        default: return more[position - 4]
        }
    }

    static func == (lhs: StubPathParameters, rhs: StubPathParameters) -> Bool {
        lhs.count == rhs.count && (0..<lhs.count).allSatisfy { lhs[$0] == rhs[$0] }
    }
}

/// Query parameters read without allocating: `name=value` pairs separated by `&`, names and values compared
/// decoded (`%XX`, and `+` for a space, as forms encode them).
enum StubQuery {
    /// Whether some parameter called `name` has the value `value`.
    static func contains(name: [UInt8], value: [UInt8], in query: Substring) -> Bool {
        var found = false
        forEachPair(in: query) { rawName, rawValue in
            if decodedEquals(rawName, name) && decodedEquals(rawValue, value) {
                found = true
                return false
            }
            return true
        }
        return found
    }

    /// The decoded value of the first parameter called `name` (empty for `name` without `=`); nil when absent.
    static func value(of name: String, in query: Substring) -> [UInt8]? {
        let wanted = Array(name.utf8)
        var result: [UInt8]?
        forEachPair(in: query) { rawName, rawValue in
            guard decodedEquals(rawName, wanted) else { return true }
            result = decoded(rawValue)
            return false
        }
        return result
    }

    /// Calls `body` with each pair's raw name and value until it returns false.
    private static func forEachPair(
        in query: Substring,
        _ body: (Substring.UTF8View.SubSequence, Substring.UTF8View.SubSequence) -> Bool
    ) {
        let utf8 = query.utf8
        var start = utf8.startIndex
        while start <= utf8.endIndex {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: "&")) ?? utf8.endIndex
            let pair = utf8[start..<end]
            if !pair.isEmpty {
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
                let value = equals == pair.endIndex ? pair[pair.endIndex...] : pair[utf8.index(after: equals)...]
                if !body(pair[..<equals], value) { return }
            }
            guard end < utf8.endIndex else { return }
            start = utf8.index(after: end)
        }
    }

    private static func decodedEquals(_ raw: Substring.UTF8View.SubSequence, _ expected: [UInt8]) -> Bool {
        var position = 0
        var equal = true
        decode(raw) { byte in
            guard equal, position < expected.count, expected[position] == byte else {
                equal = false
                return
            }
            position += 1
        }
        return equal && position == expected.count
    }

    private static func decoded(_ raw: Substring.UTF8View.SubSequence) -> [UInt8] {
        var output: [UInt8] = []
        decode(raw) { output.append($0) }
        return output
    }

    private static func decode(_ raw: Substring.UTF8View.SubSequence, _ emit: (UInt8) -> Void) {
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "+") {
                emit(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), let first = raw.index(index, offsetBy: 1, limitedBy: raw.endIndex),
                first < raw.endIndex, let second = raw.index(first, offsetBy: 1, limitedBy: raw.endIndex),
                second < raw.endIndex, let high = PathNormalizer.hexValue(raw[first]),
                let low = PathNormalizer.hexValue(raw[second])
            {
                emit(high << 4 | low)
                index = second
            } else {
                emit(byte)
            }
            index = raw.index(after: index)
        }
    }
}

/// The generator behind a stub's random choices (`{{uuid}}`, `{{random_int}}`), seeded from the stub's `seed` so that
/// a load test can be repeated; shared by every thread under a lock.
final class StubRandom: Sendable {
    private let state: Locked<SplitMix64>

    init(seed: UInt64) { state = Locked(SplitMix64(seed: seed)) }

    func next() -> UInt64 { state.withLock { $0.next() } }

    /// Uniform in `range` (both ends included).
    func integer(in range: ClosedRange<Int64>) -> Int64 {
        let width = UInt64(bitPattern: range.upperBound &- range.lowerBound) &+ 1
        let draw = next()
        // width 0: the whole 64-bit range.
        let offset = width == 0 ? draw : draw.multipliedFullWidth(by: width).high
        return range.lowerBound &+ Int64(bitPattern: offset)
    }

    /// A version 4 UUID, lower-case (`3f2504e0-4f89-41d3-9a0c-0305e82c3301`).
    func uuid() -> [UInt8] {
        var high = next()
        var low = next()
        high = (high & ~0xF000) | 0x4000  // version 4
        low = (low & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000  // RFC 4122 variant
        let hex = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(36)
        for (position, word) in [high, low].enumerated() {
            for nibble in 0..<16 {
                let shift = UInt64(60 - nibble * 4)
                output.append(hex[Int((word >> shift) & 0xF)])
                let written = position * 16 + nibble + 1
                if written == 8 || written == 12 || written == 16 || written == 20 { output.append(UInt8(ascii: "-")) }
            }
        }
        return output
    }
}

/// A small JSON reader for `match.json` (a request body's fields): bounded depth, no Foundation, numbers as `Double`.
enum StubJSON {
    /// The deepest nesting read; deeper documents do not match.
    static let maxDepth = 64

    /// Whether every field in `fields` is present in `body` with an equal value.
    static func matches(_ fields: [StubJSONField], body: [UInt8]) -> Bool {
        guard let document = parse(body) else { return false }
        return fields.allSatisfy { field in value(at: field.path, in: document).map { equal($0, field.value) } ?? false
        }
    }

    static func value(at path: [String], in document: StubJSONValue) -> StubJSONValue? {
        var current = document
        for key in path {
            switch current {
            case .object(let members):
                guard let next = members[key] else { return nil }
                current = next
            case .array(let items):
                guard let position = Int(key), items.indices.contains(position) else { return nil }
                current = items[position]
            default:
                return nil
            }
        }
        return current
    }

    static func equal(_ lhs: StubJSONValue, _ rhs: StubJSONValue) -> Bool { lhs == rhs }

    /// The document in `bytes`, or nil when it is not JSON.
    static func parse(_ bytes: [UInt8]) -> StubJSONValue? {
        var reader = Reader(bytes: bytes)
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.position == bytes.count ? value : nil
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func value(depth: Int) -> StubJSONValue? {
            guard depth < StubJSON.maxDepth else { return nil }
            skipSpace()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                position += 1
                var members: [String: StubJSONValue] = [:]
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .object(members)
                }
                while true {
                    skipSpace()
                    guard let key = string() else { return nil }
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                    position += 1
                    guard let member = value(depth: depth + 1) else { return nil }
                    members[key] = member
                    skipSpace()
                    guard position < bytes.count else { return nil }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        continue
                    }
                    if bytes[position] == UInt8(ascii: "}") {
                        position += 1
                        return .object(members)
                    }
                    return nil
                }
            case UInt8(ascii: "["):
                position += 1
                var items: [StubJSONValue] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    return .array(items)
                }
                while true {
                    guard let item = value(depth: depth + 1) else { return nil }
                    items.append(item)
                    skipSpace()
                    guard position < bytes.count else { return nil }
                    if bytes[position] == UInt8(ascii: ",") {
                        position += 1
                        continue
                    }
                    if bytes[position] == UInt8(ascii: "]") {
                        position += 1
                        return .array(items)
                    }
                    return nil
                }
            case UInt8(ascii: "\""):
                return string().map(StubJSONValue.string)
            case UInt8(ascii: "t"):
                return literal("true", .bool(true))
            case UInt8(ascii: "f"):
                return literal("false", .bool(false))
            case UInt8(ascii: "n"):
                return literal("null", .null)
            default:
                return number()
            }
        }

        mutating func literal(_ word: String, _ value: StubJSONValue) -> StubJSONValue? {
            let expected = Array(word.utf8)
            guard position + expected.count <= bytes.count,
                bytes[position..<(position + expected.count)].elementsEqual(expected)
            else { return nil }
            position += expected.count
            return value
        }

        mutating func number() -> StubJSONValue? {
            let start = position
            while position < bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position])
                    || [UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")]
                        .contains(bytes[position])
            {
                position += 1
            }
            guard position > start, let number = Double(String(decoding: bytes[start..<position], as: UTF8.self)),
                number.isFinite
            else { return nil }
            return .number(number)
        }

        mutating func string() -> String? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
            position += 1
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll(keepingCapacity: true)
            }
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    guard position < bytes.count else { return nil }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""): raw.append(UInt8(ascii: "\""))
                    case UInt8(ascii: "\\"): raw.append(UInt8(ascii: "\\"))
                    case UInt8(ascii: "/"): raw.append(UInt8(ascii: "/"))
                    case UInt8(ascii: "b"): raw.append(0x08)
                    case UInt8(ascii: "f"): raw.append(0x0C)
                    case UInt8(ascii: "n"): raw.append(0x0A)
                    case UInt8(ascii: "r"): raw.append(0x0D)
                    case UInt8(ascii: "t"): raw.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(code), position + 6 <= bytes.count,
                            bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                        {
                            position += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        flush()
                        scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                    default:
                        return nil
                    }
                case 0x00..<0x20:
                    return nil
                default:
                    raw.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard position + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 {
                guard let digit = PathNormalizer.hexValue(bytes[position + offset]) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            position += 4
            return value
        }
    }
}
