/// A content coding (RFC 9110 §8.4.1) such as `gzip`. Codings are case-insensitive tokens; the raw value is
/// always lowercase.
package struct ContentCoding: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    package let rawValue: String

    /// Creates a coding from a token, lowercased. `x-gzip` is the same coding as `gzip` (RFC 9110 §8.4.1.3).
    package init(rawValue: String) {
        let lower = rawValue.lowercased()
        self.rawValue = lower == "x-gzip" ? "gzip" : lower
    }

    package static let gzip = ContentCoding(rawValue: "gzip")
    package static let deflate = ContentCoding(rawValue: "deflate")
    package static let identity = ContentCoding(rawValue: "identity")

    package var description: String { rawValue }
}

/// A parsed `Accept-Encoding` field (RFC 9110 §12.5.3).
///
/// Entries are `coding` or `coding;q=value`, case-insensitive. Entries that do not parse (a bad token, a
/// q-value outside 0...1 or with more than three decimals, an unknown parameter) are ignored rather than
/// failing the whole field.
package struct AcceptEncoding: Sendable, Hashable {
    /// One acceptable coding with its quality, `*` kept as the coding `*`.
    package struct Entry: Sendable, Hashable {
        package var coding: String
        /// Quality in thousandths, 0...1000 (q=0.5 is 500), so comparisons are exact.
        package var quality: Int
    }

    /// The entries that parsed, in order.
    package var entries: [Entry]
    /// Whether the request carried an `Accept-Encoding` field at all. Without one, any coding is allowed by
    /// the RFC, but a server should send identity; `negotiate` does.
    package var isPresent: Bool

    /// Parses every `Accept-Encoding` field in `headers`, as one list.
    package init(headers: HTTPFields) {
        let values = headers["Accept-Encoding"]
        self.init(values: values, isPresent: !values.isEmpty)
    }

    /// Parses one field value.
    package init(_ headerValue: String) {
        self.init(values: [headerValue], isPresent: true)
    }

    private init(values: [String], isPresent: Bool) {
        self.isPresent = isPresent
        var parsed: [Entry] = []
        for value in values {
            for element in value.split(separator: ",") {
                if let entry = AcceptEncoding.parseEntry(element) { parsed.append(entry) }
            }
        }
        entries = parsed
    }

    private static func parseEntry(_ element: Substring) -> Entry? {
        let parts = element.split(separator: ";", omittingEmptySubsequences: false)
        guard let first = parts.first else { return nil }
        let coding = first.trimmingHTTPWhitespace().lowercased()
        guard !coding.isEmpty, coding == "*" || HTTP1Grammar.isToken(coding.utf8) else { return nil }
        var quality = 1000
        for parameter in parts.dropFirst() {
            let trimmed = parameter.trimmingHTTPWhitespace()
            guard let equals = trimmed.firstIndex(of: "=") else { return nil }
            let name = trimmed[..<equals].trimmingHTTPWhitespace().lowercased()
            let value = trimmed[trimmed.index(after: equals)...].trimmingHTTPWhitespace()
            guard name == "q", let q = parseQValue(value) else { return nil }
            quality = q
        }
        return Entry(coding: coding == "x-gzip" ? "gzip" : coding, quality: quality)
    }

    /// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
    static func parseQValue(_ text: Substring) -> Int? {
        let bytes = Array(text.utf8)
        guard let lead = bytes.first, lead == UInt8(ascii: "0") || lead == UInt8(ascii: "1") else { return nil }
        var result = Int(lead - UInt8(ascii: "0")) * 1000
        if bytes.count == 1 { return result }
        guard bytes[1] == UInt8(ascii: "."), bytes.count <= 5 else { return nil }
        var scale = 100
        for digit in bytes[2...] {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            result += Int(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        return result <= 1000 ? result : nil
    }

    /// The quality (0...1000) the field gives `coding`: its own entry (the highest if repeated), else the `*`
    /// entry, else 1000 for identity (always acceptable unless excluded) and 0 for anything else.
    package func quality(of coding: ContentCoding) -> Int {
        let own = entries.filter { $0.coding == coding.rawValue }
        if !own.isEmpty { return own.map(\.quality).max() ?? 0 }
        let star = entries.filter { $0.coding == "*" }
        if !star.isEmpty { return star.map(\.quality).max() ?? 0 }
        return coding == .identity ? 1000 : 0
    }

    /// Picks the coding to use for a response.
    ///
    /// - Without an `Accept-Encoding` field the answer is identity.
    /// - Otherwise the acceptable coding (q > 0) with the highest quality wins; among equal qualities the order of
    ///   `available` decides (gzip before deflate by default), and a compressed coding beats identity unless
    ///   identity is listed (itself or through `*`) with a strictly higher quality.
    /// - Returns `nil` when nothing, not even identity, is acceptable (the server may answer 406 or send identity).
    package func negotiate(available: [ContentCoding] = [.gzip, .deflate]) -> ContentCoding? {
        guard isPresent else { return .identity }
        var best: ContentCoding?
        var bestQuality = 0
        for coding in available where coding != .identity {
            let q = quality(of: coding)
            if q > bestQuality {
                best = coding
                bestQuality = q
            }
        }
        // Identity listed (or matched by `*`) with a higher quality wins; implicit identity is only a fallback.
        let explicitIdentity = entries.contains { $0.coding == "identity" || $0.coding == "*" }
        let identityQuality = quality(of: .identity)
        if let best, !(explicitIdentity && identityQuality > bestQuality) { return best }
        return identityQuality > 0 ? .identity : nil
    }
}
