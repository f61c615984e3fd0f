/// An origin-form request target after normalisation: the path used both to match routes and to build the upstream
/// target (so what is matched is exactly what is forwarded), and the query exactly as sent.
package struct NormalizedTarget: Sendable, Hashable {
    /// Starts with `/`; no `.`/`..` or empty segments (a trailing `/` is kept); unreserved characters decoded; other
    /// percent-escapes upper-cased and never decoded.
    package var path: String
    /// The query without `?`, unchanged; `nil` when the target had no `?`.
    package var query: String?

    package init(path: String, query: String?) {
        self.path = path
        self.query = query
    }
}

/// Why a target was refused (answered 400).
package struct PathError: Error, Sendable, Hashable, CustomStringConvertible {
    package var reason: String

    package init(_ reason: String) { self.reason = reason }

    package var description: String { reason }
}

/// Request-target and path normalisation (RFC 3986 §6.2.2, §5.2.4) with the refusals that keep the gateway from being
/// an open proxy or a path-traversal relay (docs/reliability.md SSRF-01…08, FUZZ-04).
///
/// Refused: an empty target, `*`, absolute-form and authority-form targets, a fragment, bytes outside RFC 3986 `pchar`
/// (including a raw backslash, spaces, controls, non-ASCII), invalid percent-encoding, `%2F`, `%5C`, encoded controls
/// (`%00`…`%1F`, `%7F`), percent-encoded bytes that are not valid UTF-8 (overlong `%C0%AE`), `..` that would climb above
/// the root, and dot segments carrying parameters (`..;`, `.;x`), which some upstream servers treat as `..`.
package enum PathNormalizer {
    /// Splits and normalises an origin-form target (`/path?query`).
    package static func normalize(target: String) -> Result<NormalizedTarget, PathError> {
        if target.isEmpty { return .failure(PathError("empty request target")) }
        // An origin-form target (the usual one) is known by its first byte, without comparing it with "*".
        guard target.utf8.first == UInt8(ascii: "/") else {
            if target == "*" { return .failure(PathError("asterisk-form target")) }
            return .failure(PathError("not an origin-form target (absolute-form and authority-form are refused)"))
        }
        if let plain = plainTarget(target) { return .success(plain) }
        let bytes = Array(target.utf8)
        if bytes.contains(UInt8(ascii: "#")) { return .failure(PathError("fragment in request target")) }
        let split = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        var query: String?
        if split < bytes.endIndex {
            let queryBytes = bytes[(split + 1)...]
            if let problem = validateQuery(queryBytes) { return .failure(problem) }
            query = String(decoding: queryBytes, as: UTF8.self)
        }
        switch normalizePath(bytes[..<split]) {
        case .success(let path): return .success(NormalizedTarget(path: path, query: query))
        case .failure(let error): return .failure(error)
        }
    }

    /// The common case without copying bytes: a target whose path is already normal (only `pchar` bytes without
    /// `%`, no empty or dot segments) and whose query is valid. `nil` sends the target through the full normaliser,
    /// which gives the same result for these targets.
    static func plainTarget(_ target: String) -> NormalizedTarget? {
        let original = target
        var target = target
        return target.withUTF8 { bytes -> NormalizedTarget? in
            var previous = UInt8(ascii: "/")
            var index = 1
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "?") { break }
                guard isPathChar(byte) else { return nil }
                if previous == UInt8(ascii: "/"), byte == UInt8(ascii: "/") || byte == UInt8(ascii: ".") { return nil }
                previous = byte
                index += 1
            }
            // Without a query the path is the target itself: shared, not copied into a new string.
            guard index < bytes.count else { return NormalizedTarget(path: original, query: nil) }
            let path = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<index]), as: UTF8.self)
            let queryBytes = UnsafeBufferPointer(rebasing: bytes[(index + 1)...])
            guard validateQuery(queryBytes) == nil else { return nil }
            return NormalizedTarget(path: path, query: String(decoding: queryBytes, as: UTF8.self))
        }
    }

    /// Normalises a path (no query). Idempotent: normalising the result gives the result.
    package static func normalize(path: String) -> Result<String, PathError> {
        let bytes = Array(path.utf8)
        if bytes.contains(UInt8(ascii: "?")) || bytes.contains(UInt8(ascii: "#")) {
            return .failure(PathError("path contains '?' or '#'"))
        }
        return normalizePath(bytes[...])
    }

    static func normalizePath(_ bytes: ArraySlice<UInt8>) -> Result<String, PathError> {
        guard bytes.first == UInt8(ascii: "/") else { return .failure(PathError("path must start with '/'")) }
        // Pass 1: validate characters and escapes; decode unreserved; collect decoded bytes for the UTF-8 check.
        var canonical: [UInt8] = []
        canonical.reserveCapacity(bytes.count)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else {
                    return .failure(PathError("invalid percent-encoding"))
                }
                let value = high << 4 | low
                switch value {
                case UInt8(ascii: "/"): return .failure(PathError("encoded slash (%2F) in path"))
                case UInt8(ascii: "\\"): return .failure(PathError("encoded backslash (%5C) in path"))
                case 0: return .failure(PathError("encoded NUL (%00) in path"))
                case 0x01...0x1F, 0x7F: return .failure(PathError("encoded control character in path"))
                default: break
                }
                decoded.append(value)
                if isUnreserved(value) {
                    canonical.append(value)
                } else {
                    canonical.append(UInt8(ascii: "%"))
                    canonical.append(hexDigit(value >> 4))
                    canonical.append(hexDigit(value & 0x0F))
                }
                index += 3
                continue
            }
            if byte == UInt8(ascii: "\\") { return .failure(PathError("backslash in path")) }
            guard isPathChar(byte) else { return .failure(PathError("invalid character in path")) }
            canonical.append(byte)
            decoded.append(byte)
            index += 1
        }
        guard String(validating: decoded, as: UTF8.self) != nil else {
            return .failure(PathError("percent-encoded bytes are not valid UTF-8"))
        }
        // Pass 2: segments; drop empty and "." segments, resolve "..", keep a trailing slash.
        let rawSegments = canonical.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        var output: [ArraySlice<UInt8>] = []
        var trailingSlash = false
        for (position, segment) in rawSegments.enumerated() {
            let isLast = position == rawSegments.count - 1
            let dotPart =
                segment.split(separator: UInt8(ascii: ";"), maxSplits: 1, omittingEmptySubsequences: false)
                .first ?? segment
            let isDot = dotPart.elementsEqual([UInt8(ascii: ".")])
            let isDotDot = dotPart.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
            if (isDot || isDotDot) && dotPart.count != segment.count {
                return .failure(PathError("dot segment with parameters in path"))
            }
            if segment.isEmpty {
                if isLast { trailingSlash = true }
                continue
            }
            if isDot {
                if isLast { trailingSlash = true }
                continue
            }
            if isDotDot {
                guard !output.isEmpty else { return .failure(PathError("path escapes the root")) }
                output.removeLast()
                if isLast { trailingSlash = true }
                continue
            }
            output.append(segment)
            trailingSlash = false
        }
        var result = "/"
        result += output.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
        if trailingSlash && !output.isEmpty { result += "/" }
        return .success(result)
    }

    static func validateQuery<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> PathError? where Bytes.Index == Int {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, hexValue(bytes[index + 1]) != nil, hexValue(bytes[index + 2]) != nil
                else { return PathError("invalid percent-encoding in query") }
                index += 3
                continue
            }
            guard isPathChar(byte) || byte == UInt8(ascii: "?") else { return PathError("invalid character in query") }
            index += 1
        }
        return nil
    }

    /// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// `pchar` without `%` (handled separately), plus `/`.
    static func isPathChar(_ byte: UInt8) -> Bool {
        if isUnreserved(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// Splits a normalised path into its segments (`/a/b/` → `["a", "b", ""]`, `/` → `[]`).
    static func segments(of path: String) -> [Substring] {
        guard path != "/" else { return [] }
        return path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0 }
    }

    /// Whether `path` equals `prefix` or continues it at a segment boundary. `prefix` has no trailing slash
    /// (except the root `/`, which prefixes everything).
    static func hasSegmentPrefix(_ path: String, _ prefix: String) -> Bool {
        if prefix == "/" { return path.hasPrefix("/") }
        guard path.hasPrefix(prefix) else { return false }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "/")
    }
}
