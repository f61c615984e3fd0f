import Gateway

/// `path`: a request target through `PathNormalizer` (the gateway's path normalisation, RFC 3986 §6.2.2 and §5.2.4).
///
/// Checked: a normalised path starts with `/`, has no empty, `.` or `..` segment (a trailing `/` aside), only
/// `pchar` bytes and upper-case escapes of reserved or non-ASCII bytes (never of an unreserved byte, `/`, `\` or a
/// control), and normalising it again gives itself; the query is exactly the bytes after the first `?`; the
/// target's fast path (`normalize(target:)`) agrees with the full normaliser (`normalize(path:)`) on the path; a
/// target is refused when its path is.
enum PathTarget {
    static let target = FuzzTarget(
        name: "path",
        summary: "request-target normalisation: idempotent, no dot segments, canonical escapes, fast path = full path",
        maxLength: 4096, dictionary: "path.dict", run: run)

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let text = FuzzBytes.string(bytes)
        let targetResult = PathNormalizer.normalize(target: text)
        let (pathPart, expectedQuery) = FuzzBytes.split(text, atFirst: UInt8(ascii: "?"))
        let hasFragment = FuzzBytes.contains(text, byte: UInt8(ascii: "#"))
        switch targetResult {
        case .success(let normalized):
            try check(!hasFragment, "a target with a fragment accepted")
            try checkNormalPath(normalized.path)
            try check(normalized.query == expectedQuery, "query changed: \(String(describing: normalized.query))")
            guard case .success(let full) = PathNormalizer.normalize(path: pathPart) else {
                throw failure("the target was accepted, its path refused")
            }
            try check(full == normalized.path, "fast path \(normalized.path) and full normaliser \(full) differ")
        case .failure:
            if FuzzBytes.hasPrefix(text, "/") && !hasFragment, case .success = PathNormalizer.normalize(path: pathPart)
            {
                try check(
                    !(expectedQuery.map(isValidQuery) ?? true),
                    "a target refused although its path and query are valid")
            }
        }
        if expectedQuery == nil && !hasFragment, case .success(let path) = PathNormalizer.normalize(path: text) {
            try checkNormalPath(path)
        }
    }

    /// What every normalised path looks like, and that it is a fixed point.
    static func checkNormalPath(_ path: String) throws(FuzzFailure) {
        let bytes = Array(path.utf8)
        try check(bytes.first == UInt8(ascii: "/"), "does not start with /: \(path)")
        let segments = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        for (position, segment) in segments.enumerated() {
            let isLast = position == segments.count - 1
            try check(!segment.isEmpty || isLast, "an empty segment in \(path)")
            try check(!segment.elementsEqual(".".utf8) && !segment.elementsEqual("..".utf8), "a dot segment in \(path)")
        }
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                try check(index + 2 < bytes.count, "a cut escape in \(path)")
                let high = bytes[index + 1]
                let low = bytes[index + 2]
                try check(isUpperHex(high) && isUpperHex(low), "an escape not in upper case in \(path)")
                let value = hexValue(high) << 4 | hexValue(low)
                try check(!isUnreserved(value), "an escaped unreserved byte in \(path)")
                try check(
                    value >= 0x20 && value != 0x7F && value != UInt8(ascii: "/") && value != UInt8(ascii: "\\"),
                    "an escaped slash, backslash or control in \(path)")
                index += 3
                continue
            }
            try check(isPathChar(byte), "byte \(byte) outside pchar in \(path)")
            index += 1
        }
        guard case .success(let again) = PathNormalizer.normalize(path: path) else {
            throw failure("a normalised path is refused: \(path)")
        }
        try check(again == path, "not idempotent: \(path) -> \(again)")
        guard case .success(let asTarget) = PathNormalizer.normalize(target: path) else {
            throw failure("a normalised path is refused as a target: \(path)")
        }
        try check(asTarget.path == path && asTarget.query == nil, "as a target it changes: \(path)")
    }

    static func isValidQuery(_ query: String) -> Bool {
        let bytes = Array(query.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, isHex(bytes[index + 1]), isHex(bytes[index + 2]) else { return false }
                index += 3
                continue
            }
            guard isPathChar(bytes[index]) || bytes[index] == UInt8(ascii: "?") else { return false }
            index += 1
        }
        return true
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~".utf8.contains(byte)
        }
    }

    /// RFC 3986 `pchar` without `%`, plus `/`.
    static func isPathChar(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || "!$&'()*+,;=:@/".utf8.contains(byte)
    }

    static func isHex(_ byte: UInt8) -> Bool { hexDigitValue(byte) != nil }

    static func isUpperHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    static func hexValue(_ byte: UInt8) -> UInt8 { hexDigitValue(byte) ?? 0 }

    static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
