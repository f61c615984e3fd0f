/// RFC 9113 §8.2–8.3 checks on a received header block, applied on top of nghttp2's own HTTP messaging checks
/// (so the result does not depend on what a given libnghttp2 version enforces). ``HTTP2RequestBuilder`` applies them
/// as it builds a request's HTTP/1.1 form.
package enum HTTP2Validation {
    /// Whether the field name `name` (in any case) is a connection-specific field, forbidden in HTTP/2 (RFC 9113
    /// §8.2.2): `connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`. By length, then by
    /// comparison: no hashing per field.
    static func isConnectionSpecific(_ name: String) -> Bool {
        switch name.utf8.count {
        case 7: return name.equalsIgnoringASCIICase("upgrade")
        case 10: return name.equalsIgnoringASCIICase("connection") || name.equalsIgnoringASCIICase("keep-alive")
        case 16: return name.equalsIgnoringASCIICase("proxy-connection")
        case 17: return name.equalsIgnoringASCIICase("transfer-encoding")
        default: return false
        }
    }

    /// `name` with its ASCII letters lower-cased, and the same string when it has none in upper case (the rule in
    /// HTTP/2, and usual in HTTP/1.1): field names are ASCII tokens, so other bytes are left as they are for the
    /// name's validation to refuse. Unlike `lowercased()`, no Unicode case mapping and no new string for most names.
    static func lowercasedName(_ name: String) -> String {
        let utf8 = name.utf8
        guard utf8.contains(where: { HTTP1Grammar.lowercased($0) != $0 }) else { return name }
        return String(unsafeUninitializedCapacity: utf8.count) { buffer in
            var index = 0
            for byte in utf8 {
                buffer[index] = HTTP1Grammar.lowercased(byte)
                index += 1
            }
            return index
        }
    }

    /// A `tchar` other than an upper-case letter (``HTTP1Grammar/isTokenChar(_:)``'s class without `A`–`Z`).
    @inline(__always)
    static func isLowercaseTokenByte(_ byte: UInt8) -> Bool {
        HTTP1Grammar.isInClass(byte, low: 0x03ff_6cfa_0000_0000, high: 0x57ff_ffff_c000_0000)
    }

    /// A byte of a `:authority` or `host` value: a letter, a digit or one of `-._~!$&'()*+,;=:[]%`.
    @inline(__always)
    static func isAuthorityByte(_ byte: UInt8) -> Bool {
        HTTP1Grammar.isInClass(byte, low: 0x2fff_7ff2_0000_0000, high: 0x47ff_fffe_afff_fffe)
    }

    /// A field name as HTTP/2 allows it: a non-empty token without uppercase letters.
    static func isValidName(_ name: some Collection<UInt8>) -> Bool {
        !name.isEmpty && HTTP1Grammar.allBytes(name, isLowercaseTokenByte)
    }

    /// A field value without NUL, CR or LF, and without leading or trailing space or tab (RFC 9113 §8.2.1).
    static func isValidValue(_ value: some Collection<UInt8>) -> Bool {
        value.withContiguousStorageIfAvailable(isValidValue(bytes:))
            ?? Array(value).withUnsafeBufferPointer(isValidValue(bytes:))
    }

    /// ``isValidValue(_:)`` over contiguous bytes: the bytes HTTP/1.1 allows in a value too (tested a word at a time),
    /// then the ends.
    private static func isValidValue(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, let first = bytes.first, let last = bytes.last else { return true }
        guard HTTP1Grammar.areFieldValueBytes(UnsafeRawPointer(base), count: bytes.count) else { return false }
        return first != 0x20 && first != 0x09 && last != 0x20 && last != 0x09
    }

    /// A `:path` value: visible ASCII or obs-text, no space or control characters, starting with `/`
    /// (or exactly `*` for OPTIONS).
    static func isValidPath(_ path: some Collection<UInt8>, method: HTTPMethod) -> Bool {
        guard let first = path.first else { return false }
        if first == UInt8(ascii: "*") && path.count == 1 { return method == .options }
        guard first == UInt8(ascii: "/") else { return false }
        return HTTP1Grammar.allBytes(path) { $0 > 0x20 && $0 != 0x7f }
    }

    /// A `:authority` or `host` value: host and optional port, no userinfo, no whitespace or delimiters that could
    /// change the meaning of an HTTP/1.1 request.
    static func isValidAuthority(_ value: some Collection<UInt8>) -> Bool {
        !value.isEmpty && HTTP1Grammar.allBytes(value, isAuthorityByte)
    }

    static func isValidScheme(_ value: some Collection<UInt8>) -> Bool {
        guard let first = value.first, (first | 0x20) >= UInt8(ascii: "a"), (first | 0x20) <= UInt8(ascii: "z") else {
            return false
        }
        return value.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                return true
            default:
                return false
            }
        }
    }

    /// Validates a complete request header block (fields in wire order, pseudo-headers included) and builds the
    /// request head; returns the reason on failure. (The server builds it field by field from nghttp2's bytes with
    /// ``HTTP2RequestBuilder``, which this runs too.)
    package static func validateRequest(_ fields: [(name: String, value: String)]) -> Result<
        HTTP2ReceivedRequest, RequestError
    > {
        var builder = HTTP2RequestBuilder(fields: fields.count)
        for (name, value) in fields {
            HTTPFields.withBytes(of: name) { nameBytes in
                HTTPFields.withBytes(of: value) { valueBytes in
                    if nameBytes.first == UInt8(ascii: ":") {
                        builder.addPseudoHeader(name: nameBytes, value: valueBytes)
                    } else {
                        builder.addField(name: nameBytes, value: valueBytes)
                    }
                }
            }
        }
        return builder.finish()
    }

    /// Validates a trailer block: no pseudo-headers, valid names and values, no connection-specific fields.
    package static func validateTrailers(_ fields: [(name: String, value: String)]) -> HTTPFields? {
        var headers = HTTPFields()
        for (name, value) in fields {
            guard isValidName(name.utf8), isValidValue(value.utf8) else { return nil }
            if isConnectionSpecific(name) || name == "te" { return nil }
            headers.add(name: name, value: value)
        }
        return headers
    }
}

/// Why a request cannot be used.
package struct RequestError: Error, Sendable, Hashable, CustomStringConvertible {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
}
