import HTTPWire

/// Builds the headers sent upstream and returned to the client.
enum ProxyHeaders {
    /// Headers the gateway sets itself; a client's values are dropped (or, for `X-Forwarded-For` and `Via`, appended
    /// to).
    static let gatewayOwned = [
        "host", "content-length", "expect", "x-request-id", "x-forwarded-for",
        "x-forwarded-proto", "x-forwarded-host", "x-real-ip", "via", "forwarded"
    ]

    /// Headers that select the response or identify the caller: they stay in the coalescing identity.
    static let identity: Set<String> = ["authorization", "cookie"]

    /// The headers sent upstream for one caller. Hop-by-hop fields (and names the client lists in `Connection`), the
    /// API-key header and gateway-owned fields are removed; the client's `Authorization` is dropped when
    /// `dropAuthorization` (the upstream injects credentials); a field the upstream configures (`configured`) replaces the client's of that name; `forwarding` (see
    /// ``forwarding(client:peer:clientAddress:isTLS:requestID:version:)``) replaces a configured field of its name. Repeated fields
    /// stay separate, except `Cookie`, joined into one (HTTP/1.1 allows one; HTTP/2 clients split it).
    ///
    /// - Parameter coalescing: whether the request may share an upstream call. Then the fields that select the
    ///   response (`Authorization`, `Cookie`, the route's `coalesce_vary` headers and the configured headers) are
    ///   `stable`, the endpoint's headers that a flight's identity includes, and the others are `perRequest`, added
    ///   to the one request that is sent. Otherwise every field is `perRequest` (no dictionary to build, hash and
    ///   sort): the client's in their order, then the configured ones, then `forwarding`.
    static func upstreamHeaders(
        from client: HTTPFields, apiKeyHeader: String?, configured: HTTPFields,
        dropAuthorization: Bool, varyHeaders: [String], coalescing: Bool, forwarding: Forwarding
    )
        -> (stable: [String: String], perRequest: HTTPFields)
    {
        let listed = connectionListed(in: client)
        var stable: [String: String] = [:]
        // One list, sized once: the client's fields that are kept, the configured ones, then the forwarding fields
        // (six at most), written straight into it.
        var perRequest = HTTPFields()
        perRequest.reserveCapacity(fields: client.count + configured.count + 6, bytes: 512)
        // Fields go from list to list as bytes (`add(fieldAt:of:)`): no string is made for a field that is kept.
        func keep(_ index: Int, of source: HTTPFields) {
            perRequest.add(fieldAt: index, of: source)
        }
        let vary = varyHeaders.isEmpty ? [] : Set(varyHeaders.map { $0.lowercased() })
        let apiKeyToken = apiKeyHeader.map { HTTPFields.token(of: $0) }
        var cookie: String?
        var cookieRepeated = false
        // Read once, not through the lazy global's accessor for every field.
        let notForwarded = Self.notForwarded
        for index in 0..<client.count {
            let token = client.token(at: index)
            // Known names are decided by their token; only a name outside the table is compared as bytes.
            if notForwarded.contains(token) || (dropAuthorization && token == .authorization) { continue }
            if let apiKeyToken, apiKeyToken != .other, token == apiKeyToken { continue }
            let comparesAPIKey = apiKeyToken == .other && token == .other
            if comparesAPIKey || !listed.isEmpty || !configured.isEmpty {
                let dropped = client.withField(at: index) { name, _ in
                    (comparesAPIKey && apiKeyHeader?.equalsIgnoringASCIICase(name) == true)
                        || isListed(name, in: listed)
                        || (!configured.isEmpty && configured.contains(nameBytes: name))
                }
                if dropped { continue }
            }
            if coalescing {
                let name = client.name(at: index)
                let lower = name.lowercased()
                if identity.contains(lower) || vary.contains(lower) {
                    let separator = lower == "cookie" ? "; " : ", "
                    let value = client.value(at: index)
                    stable[name] = stable[name].map { $0 + separator + value } ?? value
                } else {
                    keep(index, of: client)
                }
                continue
            }
            if token == .cookie {
                let value = client.value(at: index)
                if let first = cookie {
                    cookie = first + "; " + value
                    cookieRepeated = true
                    continue
                }
                cookie = value
            }
            keep(index, of: client)
        }
        if cookieRepeated, let cookie { perRequest.replaceOrAdd(name: "Cookie", value: cookie) }
        if coalescing {
            for field in configured { stable[field.name] = field.value }
        } else if !configured.isEmpty {
            let replaced = forwarding.names(client: client)
            for index in 0..<configured.count where !replaced.contains(configured.token(at: index)) {
                keep(index, of: configured)
            }
        }
        forwarding.append(to: &perRequest, client: client)
        return (stable, perRequest)
    }

    /// Sets `fields` in `headers` (a `URLRequest`'s), replacing the fields of their names (compared
    /// case-insensitively); repeated names in `fields` are joined (`; ` for `Cookie`, `, ` otherwise).
    static func merge(_ fields: HTTPFields, into headers: inout [String: String]) {
        if !headers.isEmpty {
            headers = headers.filter { name, _ in !fields.contains(name: name) }
        }
        headers.reserveCapacity(headers.count + fields.count)
        for field in fields {
            if let existing = headers[field.name] {
                let separator = field.name.equalsIgnoringASCIICase("cookie") ? "; " : ", "
                headers[field.name] = existing + separator + field.value
            } else {
                headers[field.name] = field.value
            }
        }
    }

    /// The forwarding headers for one caller as a list of their own (see ``Forwarding``).
    static func forwarding(
        client: HTTPFields, peer: String?, clientAddress: String?, isTLS: Bool, requestID: String,
        version: HTTPVersion
    ) -> HTTPFields {
        var result = HTTPFields()
        Forwarding(peer: peer, clientAddress: clientAddress, isTLS: isTLS, requestID: requestID, version: version)
            .append(to: &result, client: client)
        return result
    }

    /// This hop's `Via` entry for a message received in `version` (RFC 9110 §7.6.3): `1.1 moya-gateway`,
    /// `2 moya-gateway`.
    static func via(_ version: HTTPVersion) -> String {
        if let text = staticVia(version) { return text.description }
        return version.minor == 0
            ? "\(version.major) moya-gateway" : "\(version.major).\(version.minor) moya-gateway"
    }

    /// ``via(_:)`` as static text, for the versions a request or response arrives in (nil for others): the hot
    /// path writes it without making a string.
    static func staticVia(_ version: HTTPVersion) -> StaticString? {
        switch (version.major, version.minor) {
        case (1, 1): return "1.1 moya-gateway"
        case (2, _): return "2 moya-gateway"
        case (1, 0): return "1.0 moya-gateway"
        default: return nil
        }
    }

    /// Client fields never forwarded as they are: the gateway's own (``gatewayOwned``) and the standard hop-by-hop
    /// ones, every one a name in `HTTPFieldName`'s table.
    private static let notForwarded = HTTPFieldNameSet(
        [
            .host, .contentLength, .expect, .xRequestId, .xForwardedFor, .xForwardedProto, .xForwardedHost, .xRealIp,
            .via, .forwarded, .connection, .keepAlive, .proxyConnection, .proxyAuthenticate, .proxyAuthorization, .te,
            .trailer, .transferEncoding, .upgrade, .http2Settings
        ])

    /// Whether the name `name` spells is one of `names`, ignoring ASCII case (a few length checks for most names:
    /// cheaper than lower-casing the name and hashing it).
    private static func isListed(_ name: UnsafeRawBufferPointer, in names: [String]) -> Bool {
        !names.isEmpty && names.contains { $0.equalsIgnoringASCIICase(name) }
    }

    /// The lower-cased names a peer lists in `Connection` (hop-by-hop for this message), except protected ones.
    private static func connectionListed(in headers: HTTPFields) -> [String] {
        // The usual values name nothing beyond the standard hop-by-hop fields, which are removed anyway.
        var index = headers.firstIndex(token: .connection)
        var namesOthers = false
        while let found = index, !namesOthers {
            namesOthers = headers.withField(at: found) { _, value in !isKeepAliveOrClose(value) }
            index = headers.firstIndex(token: .connection, from: found + 1)
        }
        guard namesOthers else { return [] }
        return headers.tokens(name: "Connection").map { $0.lowercased() }.filter { !HopByHop.protected.contains($0) }
    }

    /// Whether `value` is `keep-alive` or `close`, ignoring ASCII case: compared a word at a time (no string to open,
    /// as `String.equalsIgnoringASCIICase` does). Each letter's byte is compared with its case bit set (a byte that
    /// matches a lower-case letter so is that letter in either case); the hyphen's byte is compared as it is.
    private static func isKeepAliveOrClose(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress else { return false }
        switch value.count {
        case 10:
            // "keep-ali" and "ve", little-endian; no case bit at the hyphen (byte 4).
            let head = UInt64(littleEndian: base.loadUnaligned(as: UInt64.self)) | 0x2020_2000_2020_2020
            let tail = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt16.self)) | 0x2020
            return head == 0x696C_612D_7065_656B && tail == 0x6576
        case 5:
            // "clos" little-endian, and "e".
            let head = UInt32(littleEndian: base.loadUnaligned(as: UInt32.self)) | 0x2020_2020
            return head == 0x736F_6C63 && base.load(fromByteOffset: 4, as: UInt8.self) | 0x20 == 0x65
        default:
            return false
        }
    }

    /// Response fields never returned to the client: hop-by-hop, framing, the request id (the gateway sets it) and
    /// `X-Accel-Buffering` (the upstream's word to the gateway on buffering, which nginx does not pass on either).
    private static let droppedDownstream = HTTPFieldNameSet(
        [
            .contentLength, .xRequestId, .connection, .keepAlive, .proxyConnection, .proxyAuthenticate,
            .proxyAuthorization, .te, .trailer, .transferEncoding, .upgrade, .http2Settings
        ])

    /// The upstream's response headers as returned to the client: hop-by-hop and framing fields (and names listed in
    /// `Connection`) removed, `Via` (after the upstream's own, for a response `received` in that version; a stub's
    /// counts as HTTP/1.1) and the request id added, in the upstream's order. Edited in place: a list handed over
    /// (the client's, which it made with room to spare) is neither copied nor grown.
    static func downstream(
        from upstream: consuming HTTPFields, received version: HTTPVersion = .http1_1, requestID: String
    ) -> HTTPFields {
        var headers = downstream(from: consume upstream, received: version)
        headers.add(knownName: "X-Request-Id", token: .xRequestId, value: requestID)
        return headers
    }

    /// The same without the request id, which goes last: a stub's, made once per upstream.
    static func downstream(from upstream: consuming HTTPFields, received version: HTTPVersion = .http1_1)
        -> HTTPFields
    {
        let listed = connectionListed(in: upstream)
        var headers = consume upstream
        // Room for `Via` and the request id first: a list that is not this value's alone is copied once, with it.
        headers.reserveCapacity(fields: headers.count + 2, bytes: 96)
        // Read once, not through the lazy global's accessor for every field.
        let droppedDownstream = Self.droppedDownstream
        headers.removeAll { token, name in
            if droppedDownstream.contains(token) { return true }
            // `X-Accel-Buffering` (the upstream's word to the gateway) is not in the table: compared as bytes.
            if token == .other && "X-Accel-Buffering".equalsIgnoringASCIICase(name) { return true }
            return !listed.isEmpty && isListed(name, in: listed)
        }
        if let hop = staticVia(version) {
            headers.add(knownName: "Via", token: .via, staticValue: hop)
        } else {
            headers.add(knownName: "Via", token: .via, value: via(version))
        }
        return headers
    }

    /// The upstream's `Content-Length` when it framed the response: one value of digits only, and no
    /// `Transfer-Encoding` (which would override it); nil otherwise.
    static func framingLength(of upstream: HTTPFields) -> String? {
        guard !upstream.contains(name: "Transfer-Encoding") else { return nil }
        let values = upstream["Content-Length"]
        guard values.count == 1, let value = values.first, (1...19).contains(value.utf8.count),
            value.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return value
    }

    /// The same for headers read from an `HTTPURLResponse`.
    static func downstream(from upstream: [AnyHashable: Any], requestID: String) -> HTTPFields {
        var headers = HTTPFields()
        for (key, value) in upstream {
            guard let name = key as? String else { continue }
            headers.add(name: name, value: "\(value)")
        }
        headers = HopByHop.removing(from: headers)
        headers.remove(name: "Content-Length")
        headers.remove(name: "X-Request-Id")
        headers.remove(name: "X-Accel-Buffering")
        headers.add(name: "Via", value: "1.1 moya-gateway")
        headers.add(name: "X-Request-Id", value: requestID)
        return headers
    }
}
