/// A request head being received, field by field in wire order (RFC 9113 §8.2–8.3), built straight into its HTTP/1.1
/// form (``HTTP2ReceivedRequest``): `:authority` becomes the first field, `Host`, and the regular fields follow as
/// bytes with their tokens, so that no string is made per field and the head is not rebuilt afterwards. Only
/// `:method`'s uncommon spellings, `:path` and `:protocol` become strings. The first problem found is kept and
/// reported by ``finish()``, as ``HTTP2Validation/validateRequest(_:)`` reports it.
struct HTTP2RequestBuilder {
    private var method: HTTPMethod?
    private var path: String?
    private var proto: String?
    private var sawScheme = false
    private var sawAuthority = false
    private var regularSeen = false
    /// The HTTP/1.1 form's fields: `Host` from `:authority` first, then every regular field but `host` and `te`.
    private var headers = HTTPFields()
    /// The `host` fields' values (kept out of ``headers``: `Host` comes from `:authority`).
    private var hosts: [String] = []
    private var contentLengths: [String] = []
    /// How many `cookie` fields ``headers`` holds (more than one are joined by ``finish()``).
    private var cookies = 0
    private var failure: RequestError?
    /// Room for this many regular fields is made at the first field (none before: a client's streams keep an unused
    /// builder).
    private let expectedFields: Int

    init(fields: Int = 16) {
        expectedFields = fields
    }

    /// A field whose name begins with `:` (its name and value bytes valid only during the call).
    mutating func addPseudoHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        if regularSeen {
            failure = RequestError("pseudo-header after a regular field")
            return
        }
        if HTTP1Grammar.equals(name, ":method") {
            guard method == nil else { return duplicate(name) }
            guard HTTP1Grammar.isToken(value) else {
                failure = RequestError("missing or invalid :method")
                return
            }
            method = HTTPMethod.of(value)
        } else if HTTP1Grammar.equals(name, ":path") {
            guard path == nil else { return duplicate(name) }
            path = String(decoding: value, as: UTF8.self)
        } else if HTTP1Grammar.equals(name, ":scheme") {
            guard !sawScheme else { return duplicate(name) }
            sawScheme = true
            if !HTTP2Validation.isValidScheme(value) { failure = RequestError("missing or invalid :scheme") }
        } else if HTTP1Grammar.equals(name, ":authority") {
            guard !sawAuthority else { return duplicate(name) }
            sawAuthority = true
            guard HTTP2Validation.isValidAuthority(value) else {
                failure = RequestError("invalid :authority")
                return
            }
            // Pseudo-headers come before every regular field: this is the first field.
            makeRoom()
            let hostName: StaticString = "Host"
            hostName.withUTF8Buffer {
                headers.addValidated(name: UnsafeRawBufferPointer($0), value: value, token: .host)
            }
        } else if HTTP1Grammar.equals(name, ":protocol") {
            guard proto == nil else { return duplicate(name) }
            proto = String(decoding: value, as: UTF8.self)
        } else {
            failure = RequestError("unknown pseudo-header \(String(decoding: name, as: UTF8.self))")
        }
    }

    private mutating func duplicate(_ name: UnsafeRawBufferPointer) {
        failure = RequestError("duplicate \(String(decoding: name, as: UTF8.self))")
    }

    private mutating func makeRoom() {
        if headers.isEmpty { headers.reserveCapacity(expectedFields + 1) }
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
        switch token {
        case .connection, .keepAlive, .proxyConnection, .transferEncoding, .upgrade:
            failure = RequestError("connection-specific field \(String(decoding: name, as: UTF8.self))")
            return
        case .te:
            if !HTTP1Grammar.equalsLowercase(value, "trailers") { failure = RequestError("te other than trailers") }
            return
        case .host:
            hosts.append(String(decoding: value, as: UTF8.self))
            return
        case .contentLength: contentLengths.append(String(decoding: value, as: UTF8.self))
        case .cookie: cookies += 1
        default: break
        }
        makeRoom()
        headers.addValidated(name: name, value: value, token: token)
    }

    /// The request, or the first problem found.
    consuming func finish() -> Result<HTTP2ReceivedRequest, RequestError> {
        if let failure { return .failure(failure) }
        guard let method else { return .failure(.init("missing or invalid :method")) }
        if hosts.count > 1 { return .failure(.init("more than one host")) }
        for host in hosts where !HTTP2Validation.isValidAuthority(host.utf8) {
            return .failure(.init("invalid host"))
        }
        if sawAuthority, let host = hosts.first,
            !headers.withField(at: 0, { _, authority in host.equalsIgnoringASCIICase(authority) })
        {
            return .failure(.init(":authority and host differ"))
        }
        var contentLength: Int64?
        if let first = contentLengths.first {
            guard contentLengths.allSatisfy({ $0.utf8.elementsEqual(first.utf8) }), !first.isEmpty,
                first.utf8.count <= 18,
                first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else {
                return .failure(.init("invalid content-length"))
            }
            contentLength = Int64(first)
        }
        if method == .connect && proto == nil {
            // RFC 9113 §8.5: only :method and :authority; the target is the authority.
            guard !sawScheme, path == nil, sawAuthority else { return .failure(.init("malformed CONNECT")) }
            let target = headers.value(at: 0)
            return .success(
                HTTP2ReceivedRequest(
                    head: HTTPRequestHead(method: method, target: target, version: .http2, headers: joiningCookies()),
                    contentLength: contentLength))
        }
        if proto != nil && method != .connect { return .failure(.init(":protocol without CONNECT")) }
        guard sawScheme else { return .failure(.init("missing or invalid :scheme")) }
        guard let path,
            path.utf8.withContiguousStorageIfAvailable({ HTTP2Validation.isValidPath($0, method: method) })
                ?? HTTP2Validation.isValidPath(path.utf8, method: method)
        else {
            return .failure(.init("missing or invalid :path"))
        }
        guard sawAuthority || !hosts.isEmpty else { return .failure(.init("neither :authority nor host")) }
        if let proto, !HTTP1Grammar.isToken(proto.utf8) { return .failure(.init("invalid :protocol")) }
        var fields = joiningCookies()
        if !sawAuthority { fields = Self.prepending(host: hosts[0], to: fields) }
        return .success(
            HTTP2ReceivedRequest(
                head: HTTPRequestHead(method: method, target: path, version: .http2, headers: fields),
                extendedProtocol: proto, contentLength: contentLength))
    }

    /// ``headers``, moved out (``finish()`` consumes the builder, so the list is not shared while it is edited), with
    /// more than one `cookie` field joined into the first, with `"; "` (RFC 9113 §8.2.3).
    private mutating func joiningCookies() -> HTTPFields {
        var fields = HTTPFields()
        swap(&fields, &headers)
        if cookies > 1 { fields.replaceOrAdd(name: "cookie", value: fields["cookie"].joined(separator: "; ")) }
        return fields
    }

    /// `fields` after a `Host` field holding `host` (a request that named its host in a `host` field, not in
    /// `:authority`).
    private static func prepending(host: String, to fields: HTTPFields) -> HTTPFields {
        var out = HTTPFields()
        out.reserveCapacity(fields.count + 1)
        out.add(knownName: "Host", token: .host, value: host)
        out.append(contentsOf: fields)
        return out
    }
}
