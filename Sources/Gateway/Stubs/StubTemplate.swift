import HTTPWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A stub body or header value with `{{…}}` placeholders, compiled once at load into literal bytes and variables, so
/// that answering a request only copies bytes and looks values up (no template is parsed per request).
///
/// Variables: `{{path.NAME}}` (a `{NAME}` of the response's `match.path_params`), `{{query.NAME}}` (decoded),
/// `{{header.NAME}}`, `{{request_id}}`, `{{method}}`, `{{path}}` (the path the upstream would get, without query),
/// `{{now}}` (RFC 3339, UTC, to the second), `{{uuid}}` (version 4) and `{{random_int LOW HIGH}}` (inclusive), the
/// last two drawn from the stub's generator (`seed`). A missing query parameter or header is empty. Spaces inside the
/// braces are allowed (`{{ path.id }}`).
///
/// Escaping (``Escaping``): in a body whose `Content-Type` is JSON every substituted value is escaped as inside a
/// JSON string, so a value can never end the string or add to the document; in a header, control characters are
/// dropped; other bodies get the values as they are.
package struct StubTemplate: Sendable, Equatable {
    /// How substituted values are written.
    package enum Escaping: Sendable, Equatable {
        /// As they are (a body that is not JSON).
        case none
        /// As inside a JSON string: `"` → `\"`, `\` → `\\`, control characters → `\n`, `\u001f`…, U+2028/U+2029
        /// escaped too. The template's own text is never changed.
        case json
        /// Control characters (CR, LF, NUL…) dropped: a header value cannot be split.
        case header
    }

    package enum Part: Sendable, Equatable {
        case literal([UInt8])
        /// A path parameter, by its position in the match's parameter names.
        case pathParameter(Int)
        case query(String)
        case header(String)
        case requestID
        case method
        case path
        case now
        case uuid
        case randomInt(low: Int64, high: Int64)
    }

    package let parts: [Part]
    package let escaping: Escaping
    /// The literal bytes' total, to size the output once.
    package let literalByteCount: Int
    /// ``parts`` as rendering reads them: plain values (offsets into ``literals`` and ``names``), so that walking
    /// them retains nothing.
    private let ops: [Op]
    /// Every literal part's bytes, one after another.
    private let literals: [UInt8]
    /// The names `{{query.NAME}}` and `{{header.NAME}}` read, by the position an op gives.
    private let names: [String]

    /// A part with plain payloads.
    private enum Op {
        case literal(start: Int, count: Int)
        case pathParameter(Int)
        case query(Int)
        case header(Int)
        case requestID, method, path, now, uuid
        case randomInt(low: Int64, high: Int64)
    }

    init(parts: [Part], escaping: Escaping, literalByteCount: Int) {
        self.parts = parts
        self.escaping = escaping
        self.literalByteCount = literalByteCount
        var ops: [Op] = []
        var literals: [UInt8] = []
        var names: [String] = []
        for part in parts {
            switch part {
            case .literal(let bytes):
                ops.append(.literal(start: literals.count, count: bytes.count))
                literals.append(contentsOf: bytes)
            case .pathParameter(let position): ops.append(.pathParameter(position))
            case .query(let name):
                ops.append(.query(names.count))
                names.append(name)
            case .header(let name):
                ops.append(.header(names.count))
                names.append(name)
            case .requestID: ops.append(.requestID)
            case .method: ops.append(.method)
            case .path: ops.append(.path)
            case .now: ops.append(.now)
            case .uuid: ops.append(.uuid)
            case .randomInt(let low, let high): ops.append(.randomInt(low: low, high: high))
            }
        }
        self.ops = ops
        self.literals = literals
        self.names = names
    }

    package static func == (lhs: StubTemplate, rhs: StubTemplate) -> Bool {
        lhs.parts == rhs.parts && lhs.escaping == rhs.escaping
    }

    /// Whether a part reads the path parameters (the matched path is split only then).
    package var usesPathParameters: Bool {
        parts.contains { if case .pathParameter = $0 { return true } else { return false } }
    }

    /// Why a template cannot be compiled (reported by the loader with the key's path and line).
    package struct CompileError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    /// `bytes` compiled; nil when they hold no `{{` (nothing to substitute: the bytes are sent as they are).
    /// `parameterNames`: the `{parameters}` the response's match defines.
    package static func compile(_ bytes: [UInt8], parameterNames: [String], escaping: Escaping) throws(CompileError)
        -> StubTemplate?
    {
        let open: [UInt8] = [UInt8(ascii: "{"), UInt8(ascii: "{")]
        guard bytes.count >= 2, containsOpening(bytes) else { return nil }
        var parts: [Part] = []
        var literal: [UInt8] = []
        var literalCount = 0
        var index = 0
        while index < bytes.count {
            if index + 1 < bytes.count, bytes[index] == open[0], bytes[index + 1] == open[1] {
                guard let close = closing(in: bytes, from: index + 2) else {
                    throw CompileError(
                        description: "unterminated '{{' in template (set template: false to send braces as they are)")
                }
                let inner = String(decoding: bytes[(index + 2)..<close], as: UTF8.self)
                let part = try variable(inner, parameterNames: parameterNames)
                if !literal.isEmpty {
                    parts.append(.literal(literal))
                    literalCount += literal.count
                    literal = []
                }
                parts.append(part)
                index = close + 2
                continue
            }
            literal.append(bytes[index])
            index += 1
        }
        if !literal.isEmpty {
            parts.append(.literal(literal))
            literalCount += literal.count
        }
        return StubTemplate(parts: parts, escaping: escaping, literalByteCount: literalCount)
    }

    private static func containsOpening(_ bytes: [UInt8]) -> Bool {
        var previous: UInt8 = 0
        for byte in bytes {
            if byte == UInt8(ascii: "{") && previous == UInt8(ascii: "{") { return true }
            previous = byte
        }
        return false
    }

    private static func closing(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "}") && bytes[index + 1] == UInt8(ascii: "}") { return index }
            if bytes[index] == UInt8(ascii: "{") && bytes[index + 1] == UInt8(ascii: "{") { return nil }
            index += 1
        }
        return nil
    }

    /// The variables a template may use, for messages.
    static let known = "path.NAME, query.NAME, header.NAME, request_id, method, path, now, uuid, random_int LOW HIGH"

    private static func variable(_ text: String, parameterNames: [String]) throws(CompileError) -> Part {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let name = words.first else {
            throw CompileError(description: "empty '{{}}' in template (variables: \(known))")
        }
        func noArguments(_ part: Part) throws(CompileError) -> Part {
            guard words.count == 1 else {
                throw CompileError(description: "template variable '\(name)' takes no arguments")
            }
            return part
        }
        switch name {
        case "request_id": return try noArguments(.requestID)
        case "method": return try noArguments(.method)
        case "path": return try noArguments(.path)
        case "now": return try noArguments(.now)
        case "uuid": return try noArguments(.uuid)
        case "random_int":
            guard words.count == 3, let low = Int64(words[1]), let high = Int64(words[2]), low <= high else {
                throw CompileError(description: "use {{random_int LOW HIGH}} with two integers, LOW not above HIGH")
            }
            return .randomInt(low: low, high: high)
        default:
            break
        }
        let split = name.split(separator: ".", maxSplits: 1).map(String.init)
        guard split.count == 2, !split[1].isEmpty else {
            throw CompileError(
                description:
                    "unknown template variable '\(shown(name))' (variables: \(known); set template: false to send braces as they are)"
            )
        }
        let key = split[1]
        switch split[0] {
        case "path":
            guard let position = parameterNames.firstIndex(of: key) else {
                let defined =
                    parameterNames.isEmpty
                    ? "the response's match has no path_params"
                    : "match.path_params defines \(parameterNames.map { "{\($0)}" }.joined(separator: ", "))"
                throw CompileError(description: "template uses {{path.\(shown(key))}}, but \(defined)")
            }
            return try noArguments(.pathParameter(position))
        case "query":
            return try noArguments(.query(key))
        case "header":
            guard HeaderName.isValid(key) else {
                throw CompileError(description: "invalid header name '\(shown(key))' in {{header.…}}")
            }
            return try noArguments(.header(key))
        default:
            throw CompileError(
                description:
                    "unknown template variable '\(shown(name))' (variables: \(known); set template: false to send braces as they are)"
            )
        }
    }

    /// A name for a message: printable ASCII, at most 40 characters.
    private static func shown(_ text: String) -> String {
        let clean = String(
            text.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }.map(Character.init))
        return clean.count > 40 ? String(clean.prefix(40)) + "…" : clean
    }

    // MARK: Rendering

    /// The template filled in for `request`.
    func render(_ request: borrowing StubRequest, parameters: StubPathParameters? = nil, random: StubRandom) -> [UInt8]
    {
        var output: [UInt8] = []
        output.reserveCapacity(literalByteCount + 64)
        literals.withUnsafeBufferPointer { literals in
            ops.withUnsafeBufferPointer { ops in
                for op in ops {
                    switch op {
                    case .literal(let start, let count):
                        output.append(contentsOf: UnsafeBufferPointer(rebasing: literals[start..<(start + count)]))
                    case .pathParameter(let position):
                        if let range = parameters?[position] {
                            request.withPathBytes { bytes in
                                guard range.upperBound <= bytes.count else { return }
                                write(UnsafeBufferPointer(rebasing: bytes[range]), into: &output)
                            }
                        }
                    case .query(let name):
                        if let query = request.query, let value = StubQuery.value(of: names[name], in: query) {
                            write(value, into: &output)
                        }
                    case .header(let name):
                        if let value = request.headers.first(name: names[name]) { write(value.utf8, into: &output) }
                    case .requestID:
                        write(request.requestID.utf8, into: &output)
                    case .method:
                        write(request.method.rawValue.utf8, into: &output)
                    case .path:
                        request.withPathBytes { write($0, into: &output) }
                    case .now:
                        output.append(contentsOf: Self.rfc3339Now())
                    case .uuid:
                        output.append(contentsOf: random.uuid())
                    case .randomInt(let low, let high):
                        output.append(contentsOf: String(random.integer(in: low...high)).utf8)
                    }
                }
            }
        }
        return output
    }

    private func write<Bytes: Sequence<UInt8>>(_ value: Bytes, into output: inout [UInt8]) {
        switch escaping {
        case .none:
            output.append(contentsOf: value)
        case .header:
            for byte in value where byte >= 0x20 && byte != 0x7F || byte == 0x09 { output.append(byte) }
        case .json:
            Self.appendJSONEscaped(value, into: &output)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// Whether `byte` may need escaping in a JSON string (a quote, a backslash, a control character, or the lead
    /// byte of U+2028/U+2029).
    private static func mayNeedJSONEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F || byte == 0xE2
    }

    /// `value` escaped as inside a JSON string (RFC 8259), U+2028 and U+2029 included.
    static func appendJSONEscaped<Bytes: Sequence<UInt8>>(_ value: Bytes, into output: inout [UInt8]) {
        // Most values (ids, numbers, names) have nothing to escape: copied as they are.
        if !value.contains(where: mayNeedJSONEscape) {
            output.append(contentsOf: value)
            return
        }
        let hex = Self.hex
        var pending: [UInt8] = []  // E2 80 of a possible U+2028/2029
        for byte in value {
            if !pending.isEmpty {
                if pending.count == 1 {
                    if byte == 0x80 {
                        pending.append(byte)
                        continue
                    }
                } else if byte == 0xA8 || byte == 0xA9 {
                    output.append(contentsOf: Array(#"\u202"#.utf8))
                    output.append(byte == 0xA8 ? UInt8(ascii: "8") : UInt8(ascii: "9"))
                    pending.removeAll()
                    continue
                }
                output.append(contentsOf: pending)
                pending.removeAll()
            }
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20, 0x7F:
                output.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]
                ])
            case 0xE2:
                pending.append(byte)
            default:
                output.append(byte)
            }
        }
        output.append(contentsOf: pending)
    }

    /// The current time in RFC 3339 (`2025-01-31T23:59:59Z`).
    static func rfc3339Now() -> [UInt8] {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var output: [UInt8] = []
        output.reserveCapacity(20)
        func digits(_ value: Int32, _ count: Int) {
            var divisor: Int32 = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = max(value, 0)
            while divisor > 0 {
                output.append(UInt8(ascii: "0") + UInt8((rest / divisor) % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(parts.tm_year + 1900, 4)
        output.append(UInt8(ascii: "-"))
        digits(parts.tm_mon + 1, 2)
        output.append(UInt8(ascii: "-"))
        digits(parts.tm_mday, 2)
        output.append(UInt8(ascii: "T"))
        digits(parts.tm_hour, 2)
        output.append(UInt8(ascii: ":"))
        digits(parts.tm_min, 2)
        output.append(UInt8(ascii: ":"))
        digits(parts.tm_sec, 2)
        output.append(UInt8(ascii: "Z"))
        return output
    }
}
