#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A path condition in the route syntax (`path`, `path_prefix`, `path_params` with `{name}` segments), compiled once
/// for matching a normalised path without allocating: routes use its template parsing
/// (``templateSegments(of:)``), stub responses (`stub.responses[].match`) the whole matcher.
package struct PathPattern: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// No path condition: every path.
        case any
        /// The path must equal it.
        case exact(String)
        /// The path must equal it or continue it at a segment boundary (`/` matches everything).
        case prefix(String)
        /// Segments in order: the literal bytes, or `nil` for a `{parameter}` (one non-empty segment).
        case template([[UInt8]?])
    }

    package let kind: Kind
    /// The template's parameter names, in segment order (empty for the other kinds).
    package let parameterNames: [String]
    /// An exact path's or a prefix's bytes (empty otherwise), for matching without a `String` comparison.
    private let literal: [UInt8]

    private init(kind: Kind, parameterNames: [String]) {
        self.kind = kind
        self.parameterNames = parameterNames
        switch kind {
        case .exact(let text), .prefix(let text): literal = Array(text.utf8)
        case .any, .template: literal = []
        }
    }

    package static let any = PathPattern(kind: .any, parameterNames: [])

    package static func exact(_ path: String) -> PathPattern { PathPattern(kind: .exact(path), parameterNames: []) }

    package static func prefix(_ prefix: String) -> PathPattern {
        PathPattern(kind: .prefix(prefix), parameterNames: [])
    }

    package static func == (lhs: PathPattern, rhs: PathPattern) -> Bool {
        lhs.kind == rhs.kind && lhs.parameterNames == rhs.parameterNames
    }

    /// A `path_params` template (already validated by the loader: `{name}` segments with distinct names).
    package static func template(_ template: String) -> PathPattern {
        let (segments, names) = templateSegments(of: template)
        return PathPattern(kind: .template(segments.map { $0.map { Array($0.utf8) } }), parameterNames: names)
    }

    /// A template's segments (`nil` for a `{parameter}`) and its parameter names in order: `/users/{id}/posts` →
    /// `(["users", nil, "posts"], ["id"])`.
    static func templateSegments(of template: String) -> (segments: [String?], names: [String]) {
        var names: [String] = []
        let segments: [String?] = PathNormalizer.segments(of: template).map { segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                names.append(String(segment.dropFirst().dropLast()))
                return nil
            }
            return String(segment)
        }
        return (segments, names)
    }

    /// Whether the normalised `path` (no query) matches.
    package func matches(_ path: Substring) -> Bool {
        switch kind {
        case .any:
            return true
        case .exact(let exact):
            return path.utf8.elementsEqual(exact.utf8)
        case .prefix(let prefix):
            if prefix == "/" { return path.utf8.first == UInt8(ascii: "/") }
            guard path.utf8.starts(with: prefix.utf8) else { return false }
            let rest = path.utf8.dropFirst(prefix.utf8.count)
            return rest.isEmpty || rest.first == UInt8(ascii: "/")
        case .template(let segments):
            return Self.withBytes(path) { Self.scan($0, segments, captured: nil, in: path) }
        }
    }

    /// Where the template's parameters are in the normalised path whose UTF-8 is `bytes` (offsets, in
    /// ``parameterNames`` order), or nil when it does not match.
    func parameterRanges(bytes: UnsafeBufferPointer<UInt8>) -> StubPathParameters? {
        guard case .template(let segments) = kind else { return matches(bytes: bytes) ? StubPathParameters() : nil }
        var ranges = StubPathParameters()
        let matched = withUnsafeMutablePointer(to: &ranges) { Self.scan(bytes, segments, ranges: $0) }
        return matched ? ranges : nil
    }

    /// Whether the normalised path whose UTF-8 is `bytes` matches: ``matches(_:)`` for a caller that holds the bytes
    /// already (a stub tries many patterns against one path).
    func matches(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        switch kind {
        case .any:
            return true
        case .exact:
            return bytes.count == literal.count && Self.starts(bytes, with: literal)
        case .prefix:
            if literal == [UInt8(ascii: "/")] { return bytes.first == UInt8(ascii: "/") }
            guard bytes.count >= literal.count, Self.starts(bytes, with: literal) else { return false }
            return bytes.count == literal.count || bytes[literal.count] == UInt8(ascii: "/")
        case .template(let segments):
            return Self.scan(bytes, segments, captured: nil, in: "")
        }
    }

    private static func starts(_ bytes: UnsafeBufferPointer<UInt8>, with literal: [UInt8]) -> Bool {
        literal.withUnsafeBufferPointer { own in
            guard let ownBase = own.baseAddress, let base = bytes.baseAddress else { return own.isEmpty }
            return memcmp(ownBase, base, own.count) == 0
        }
    }

    /// The values of the template's parameters in `path` (in ``parameterNames`` order), or nil when it does not match.
    package func parameters(in path: Substring) -> [Substring]? {
        guard case .template(let segments) = kind else { return matches(path) ? [] : nil }
        var values: [Substring] = []
        values.reserveCapacity(parameterNames.count)
        let matched = withUnsafeMutablePointer(to: &values) { captured in
            Self.withBytes(path) { Self.scan($0, segments, captured: captured, in: path) }
        }
        return matched ? values : nil
    }

    private static func withBytes(_ path: Substring, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        if let result = path.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(path.utf8).withUnsafeBufferPointer(body)
    }

    /// Whether `bytes` (the UTF-8 of `path`) match `segments`; each parameter's value is appended to `captured`, its
    /// offsets to `ranges`.
    private static func scan(
        _ bytes: UnsafeBufferPointer<UInt8>, _ segments: [[UInt8]?],
        captured: UnsafeMutablePointer<[Substring]>? = nil, in path: Substring = "",
        ranges: UnsafeMutablePointer<StubPathParameters>? = nil
    ) -> Bool {
        let slash = UInt8(ascii: "/")
        guard bytes.first == slash else { return false }
        // `/` has no segments; `/a/b/` has three (the last empty), as `PathNormalizer.segments(of:)` counts them.
        if bytes.count == 1 { return segments.isEmpty }
        var start = 1
        var index = 0
        while true {
            var end = start
            while end < bytes.count && bytes[end] != slash { end += 1 }
            guard index < segments.count else { return false }
            if let literal = segments[index] {
                guard end - start == literal.count else { return false }
                let same = literal.withUnsafeBufferPointer { own in
                    guard let ownBase = own.baseAddress, let base = bytes.baseAddress else { return own.isEmpty }
                    return memcmp(ownBase, base + start, own.count) == 0
                }
                guard same else { return false }
            } else {
                guard end > start else { return false }
                ranges?.pointee.append(start..<end)
                if let captured {
                    let utf8 = path.utf8
                    let lower = utf8.index(utf8.startIndex, offsetBy: start)
                    captured.pointee.append(path[lower..<utf8.index(lower, offsetBy: end - start)])
                }
            }
            index += 1
            if end >= bytes.count { break }
            start = end + 1
        }
        return index == segments.count
    }
}
