/// A minimal absolute-URL splitter for `http` and `https` (scheme, host, port, origin-form target), without
/// Foundation, so the client can run on the hot path. It works on the string's UTF-8 bytes. The authority may not
/// hold userinfo, spaces or control characters.
package struct HTTPURL: Sendable, Hashable {
    package var scheme: String
    package var host: String
    package var port: Int
    package var target: String

    package init(parsing string: String) throws {
        var copy = string
        guard let parsed = copy.withUTF8({ HTTPURL.parse($0) }) else { throw HTTPClientError.invalidURL(string) }
        self = parsed
    }

    private init(scheme: String, host: String, port: Int, target: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.target = target
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPURL? {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon + 2 < bytes.count,
            bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/")
        else { return nil }
        let scheme: String
        if matches(bytes[..<colon], "http") {
            scheme = "http"
        } else if matches(bytes[..<colon], "https") {
            scheme = "https"
        } else {
            return nil
        }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count {
            let byte = bytes[authorityEnd]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { return nil }
            // No space, control or DEL in the host or port: a NUL would end the name handed to getaddrinfo early.
            if byte <= 0x20 || byte == 0x7F { return nil }
            authorityEnd += 1
        }
        guard authorityEnd > authorityStart else { return nil }
        var hostRange = authorityStart..<authorityEnd
        var portRange: Range<Int>?
        if bytes[authorityStart] == UInt8(ascii: "[") {
            guard let close = bytes[authorityStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostRange = (authorityStart + 1)..<close
            if close + 1 < authorityEnd {
                guard bytes[close + 1] == UInt8(ascii: ":") else { return nil }
                portRange = (close + 2)..<authorityEnd
            }
        } else if let colon = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostRange = authorityStart..<colon
            portRange = (colon + 1)..<authorityEnd
        }
        guard !hostRange.isEmpty else { return nil }
        var port = scheme == "https" ? 443 : 80
        if let portRange, !portRange.isEmpty {
            guard portRange.count <= 5 else { return nil }
            var value = 0
            for index in portRange {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            guard value > 0, value < 65536 else { return nil }
            port = value
        }
        var targetEnd = authorityEnd
        while targetEnd < bytes.count, bytes[targetEnd] != UInt8(ascii: "#") { targetEnd += 1 }
        var target = String(decoding: UnsafeBufferPointer(rebasing: bytes[authorityEnd..<targetEnd]), as: UTF8.self)
        if target.isEmpty || target.utf8.first == UInt8(ascii: "?") { target = "/" + target }
        let host = String(decoding: UnsafeBufferPointer(rebasing: bytes[hostRange]), as: UTF8.self)
        return HTTPURL(scheme: scheme, host: host, port: port, target: target)
    }

    /// Whether `bytes` spell the lower-case ASCII `word`, ignoring ASCII case.
    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence, _ word: StaticString) -> Bool {
        guard bytes.count == word.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        return zip(bytes, expected).allSatisfy { $0 | 0x20 == $1 }
    }
}
