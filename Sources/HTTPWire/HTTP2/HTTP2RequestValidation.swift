/// RFC 9113 §8.2–8.3 checks on a received header block, applied on top of nghttp2's own HTTP messaging checks
/// (so the result does not depend on what a given libnghttp2 version enforces), and the HTTP/2 → HTTP/1.1
/// conversion.
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
        HTTP2RequestHead, RequestError
    > {
        var builder = HTTP2RequestBuilder(fields: fields.count)
        for (name, value) in fields {
            if name.utf8.first == UInt8(ascii: ":") {
                HTTPFields.withBytes(of: name) { builder.addPseudoHeader(name: $0, value: value) }
            } else {
                HTTPFields.withBytes(of: name) { nameBytes in
                    HTTPFields.withBytes(of: value) { builder.addField(name: nameBytes, value: $0) }
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

extension HTTP2RequestHead {
    /// The request as an HTTP/1.1 request head for an upstream that speaks HTTP/1.1.
    ///
    /// - The target is `:path` (the authority for CONNECT).
    /// - Exactly one `Host`, first, from `:authority` (or the `host` field when there is no `:authority`).
    /// - Every `cookie` field is joined with `"; "` into one `Cookie` (RFC 9113 §8.2.3).
    /// - Pseudo-headers, `host`, `te` and connection-specific fields are dropped.
    /// - Every name, value, the method, target and host are checked again, so a head built by hand cannot inject
    ///   a line into the HTTP/1.1 request: any CR, LF, NUL, space in the target, or invalid name throws.
    package func toHTTP1Request() throws(RequestError) -> HTTPRequestHead {
        guard HTTP1Grammar.isToken(method.rawValue.utf8) else {
            throw RequestError("invalid method")
        }
        let hostFields = headers["host"]
        guard let host = authority ?? hostFields.first else { throw RequestError("no authority") }
        // Checked over the string's contiguous bytes: through its UTF-8 view, each byte cost an index step.
        guard
            host.utf8.withContiguousStorageIfAvailable({ HTTP2Validation.isValidAuthority($0) })
                ?? HTTP2Validation.isValidAuthority(host.utf8)
        else { throw RequestError("invalid authority") }
        if let authority, hostFields.contains(where: { !$0.equalsIgnoringASCIICase(authority) }) {
            throw RequestError(":authority and host differ")
        }
        let target: String
        if method == .connect && extendedProtocol == nil {
            target = host
        } else {
            guard let path,
                path.utf8.withContiguousStorageIfAvailable({ HTTP2Validation.isValidPath($0, method: method) })
                    ?? HTTP2Validation.isValidPath(path.utf8, method: method)
            else {
                throw RequestError("invalid path")
            }
            target = path
        }
        // Checked from the fields' bytes (no string per field); without cookies (to join), the fields kept are copied
        // as bytes, with their tokens.
        var failure: RequestError?
        var hasCookie = false
        var fieldBytes = 0
        headers.forEachField { token, name, value in
            guard failure == nil else { return }
            fieldBytes &+= name.count &+ value.count &+ HTTPFieldEntry.separatorCount
            if !HTTP1Grammar.isToken(name) {
                failure = RequestError("invalid field name")
            } else if !value.isEmpty && !HTTP2Validation.isValidValue(value.assumingMemoryBound(to: UInt8.self)) {
                failure = RequestError("invalid field value")
            } else if token == .cookie {
                hasCookie = true
            }
        }
        if let failure { throw failure }
        // Room for `Host` and every field at once: one allocation.
        var out = HTTPFields()
        out.reserveCapacity(
            fields: headers.count + 1, bytes: 4 + HTTPFieldEntry.separatorCount + host.utf8.count + fieldBytes)
        out.add(name: "Host", value: host)
        guard hasCookie else {
            out.append(contentsOf: headers) { token, _ in
                switch token {
                case .host, .te, .connection, .keepAlive, .proxyConnection, .transferEncoding, .upgrade: return false
                default: return true
                }
            }
            return HTTPRequestHead(method: method, target: target, version: .http1_1, headers: out)
        }
        var cookies: [String] = []
        var cookieInserted = false
        for field in headers {
            guard HTTP1Grammar.isToken(field.name.utf8) else {
                throw RequestError("invalid field name")
            }
            guard HTTP2Validation.isValidValue(field.value.utf8) || field.value.isEmpty else {
                throw RequestError("invalid field value")
            }
            let lower = HTTP2Validation.lowercasedName(field.name)
            if lower == "host" || lower == "te" || HTTP2Validation.isConnectionSpecific(lower) { continue }
            if lower == "cookie" {
                cookies.append(field.value)
                if !cookieInserted {
                    // Placeholder keeps the first cookie's position; filled in below.
                    out.add(name: "cookie", value: "")
                    cookieInserted = true
                }
                continue
            }
            out.add(field)
        }
        if cookieInserted {
            out.replaceOrAdd(name: "cookie", value: cookies.joined(separator: "; "))
        }
        return HTTPRequestHead(method: method, target: target, version: .http1_1, headers: out)
    }
}

/// A request head being received, field by field in wire order (RFC 9113 §8.2–8.3): pseudo-headers as strings (a few
/// per request), regular fields checked and kept as bytes with their tokens, so that no string is made per field. The
/// first problem found is kept and reported by ``finish()``, as ``HTTP2Validation/validateRequest(_:)`` reports it.
struct HTTP2RequestBuilder {
    private var method: String?
    private var scheme: String?
    private var authority: String?
    private var path: String?
    private var proto: String?
    private var regularSeen = false
    private var headers = HTTPFields()
    private var hosts: [String] = []
    private var contentLengths: [String] = []
    private var failure: RequestError?

    /// A builder with room for `fields` regular fields, made at the first (none before: a client's streams keep an
    /// unused one).
    init(fields: Int = 16) {
        expectedFields = fields
    }

    private let expectedFields: Int

    /// A field whose name begins with `:` (its bytes valid only during the call).
    mutating func addPseudoHeader(name: UnsafeRawBufferPointer, value: String) {
        guard failure == nil else { return }
        if regularSeen {
            failure = RequestError("pseudo-header after a regular field")
            return
        }
        func set(_ slot: inout String?) -> Bool {
            if slot != nil { return false }
            slot = value
            return true
        }
        let ok: Bool
        if HTTP1Grammar.equals(name, ":method") {
            ok = set(&method)
        } else if HTTP1Grammar.equals(name, ":path") {
            ok = set(&path)
        } else if HTTP1Grammar.equals(name, ":scheme") {
            ok = set(&scheme)
        } else if HTTP1Grammar.equals(name, ":authority") {
            ok = set(&authority)
        } else if HTTP1Grammar.equals(name, ":protocol") {
            ok = set(&proto)
        } else {
            failure = RequestError("unknown pseudo-header \(String(decoding: name, as: UTF8.self))")
            return
        }
        if !ok { failure = RequestError("duplicate \(String(decoding: name, as: UTF8.self))") }
    }

    /// A regular field, from its bytes (valid only during the call).
    mutating func addField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        regularSeen = true
        // A valid name has no uppercase letters: it is its own lowercased form.
        guard HTTP2Validation.isValidName(name) else {
            failure = RequestError("invalid field name")
            return
        }
        guard value.isEmpty || HTTP2Validation.isValidValue(value.assumingMemoryBound(to: UInt8.self)) else {
            failure = RequestError("invalid value in \(String(decoding: name, as: UTF8.self))")
            return
        }
        let token = HTTPFieldName.lookup(name)
        if headers.isEmpty { headers.reserveCapacity(expectedFields) }
        switch token {
        case .connection, .keepAlive, .proxyConnection, .transferEncoding, .upgrade:
            failure = RequestError("connection-specific field \(String(decoding: name, as: UTF8.self))")
            return
        case .te:
            guard HTTP1Grammar.equalsLowercase(value, "trailers") else {
                failure = RequestError("te other than trailers")
                return
            }
        case .host: hosts.append(String(decoding: value, as: UTF8.self))
        case .contentLength: contentLengths.append(String(decoding: value, as: UTF8.self))
        default: break
        }
        headers.addValidated(name: name, value: value, token: token)
    }

    /// The request head, or the first problem found.
    func finish() -> Result<HTTP2RequestHead, RequestError> {
        if let failure { return .failure(failure) }
        guard let method, HTTP1Grammar.isToken(method.utf8) else {
            return .failure(.init("missing or invalid :method"))
        }
        let httpMethod = HTTPMethod(method)
        if hosts.count > 1 { return .failure(.init("more than one host")) }
        for host in hosts where !HTTP2Validation.isValidAuthority(host.utf8) {
            return .failure(.init("invalid host"))
        }
        if let authority, !HTTP2Validation.isValidAuthority(authority.utf8) {
            return .failure(.init("invalid :authority"))
        }
        if let authority, let host = hosts.first, !authority.equalsIgnoringASCIICase(host) {
            return .failure(.init(":authority and host differ"))
        }
        if let first = contentLengths.first {
            guard contentLengths.allSatisfy({ $0.utf8.elementsEqual(first.utf8) }), !first.isEmpty,
                first.utf8.count <= 18,
                first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else {
                return .failure(.init("invalid content-length"))
            }
        }
        if httpMethod == .connect && proto == nil {
            // RFC 9113 §8.5: only :method and :authority.
            guard scheme == nil, path == nil, authority != nil else { return .failure(.init("malformed CONNECT")) }
            return .success(
                HTTP2RequestHead(
                    method: httpMethod, scheme: nil, authority: authority, path: nil,
                    headers: headers))
        }
        if proto != nil && httpMethod != .connect { return .failure(.init(":protocol without CONNECT")) }
        guard let scheme, HTTP2Validation.isValidScheme(scheme.utf8) else {
            return .failure(.init("missing or invalid :scheme"))
        }
        guard let path, HTTP2Validation.isValidPath(path.utf8, method: httpMethod) else {
            return .failure(.init("missing or invalid :path"))
        }
        guard authority != nil || !hosts.isEmpty else { return .failure(.init("neither :authority nor host")) }
        if let proto, !HTTP1Grammar.isToken(proto.utf8) { return .failure(.init("invalid :protocol")) }
        return .success(
            HTTP2RequestHead(
                method: httpMethod, scheme: scheme, authority: authority,
                path: path, extendedProtocol: proto, headers: headers))
    }
}
