import HTTPWire

/// `h2-fields`: a decoded HTTP/2 request header block through `HTTP2Validation.validateRequest` (RFC 9113 §8.2–8.3),
/// which builds the HTTP/1.1 form a handler and an HTTP/1.1 upstream get (`HTTP2RequestBuilder`, as the server
/// session builds it).
///
/// Input: one field per line (LF), name and value split at the first TAB, as UTF-8 (invalid bytes become U+FFFD, as
/// `HTTP2Session` decodes them). Trailer validation gets the same fields.
///
/// Checked: an accepted request had a token method, a valid `:scheme` and `:path` (or is a plain CONNECT with only
/// `:authority`), lower-case token field names, clean values, at most one `host`, `te` only as `trailers` and no
/// connection-specific field; its head has exactly one Host, first, equal to `:authority` (or `host`), the target
/// `:path` (the authority for CONNECT), no pseudo-header, `te` or connection-specific field, at most one cookie field
/// holding every cookie in order, and every other regular field as sent; and written by `HTTP1Serializer` it is
/// either refused or parsed back by `HTTP1RequestParser` to exactly itself (no field or request can be smuggled
/// through the conversion).
enum HTTP2FieldsTarget {
    static let target = FuzzTarget(
        name: "h2-fields",
        summary: "HTTP/2 request header validation and the HTTP/1.1 form, with a serializer/parser round trip",
        maxLength: 4096, dictionary: "h2.dict", run: run)

    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding",
        "upgrade"
    ]

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var fields: [(name: String, value: String)] = []
        for line in FuzzBytes.split(bytes, separator: 0x0A) where !line.isEmpty {
            if let tab = line.firstIndex(of: 0x09) {
                fields.append(
                    (
                        FuzzBytes.string(UnsafeRawBufferPointer(rebasing: line[..<tab])),
                        FuzzBytes.string(UnsafeRawBufferPointer(rebasing: line[(tab + 1)...]))
                    ))
            } else {
                fields.append((FuzzBytes.string(line), ""))
            }
        }
        if let trailers = HTTP2Validation.validateTrailers(fields) {
            try check(trailers.count == fields.count, "trailers lost or gained fields")
            for field in trailers {
                try check(
                    !FuzzBytes.hasPrefix(field.name, ":") && !connectionSpecific.contains(field.name)
                        && field.name != "te",
                    "a forbidden trailer field: \(field.name)")
            }
        }
        guard case .success(let request) = HTTP2Validation.validateRequest(fields) else { return }
        try checkAccepted(request, fields: fields)
        try checkConverted(request, fields: fields)
        var http1 = request.head
        http1.version = .http1_1
        try checkRoundTrip(http1)
    }

    /// The value of the pseudo-header `name` among `fields`, if sent.
    static func pseudo(_ name: String, in fields: [(name: String, value: String)]) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// What the sender's fields must have been for the request to be accepted.
    static func checkAccepted(
        _ request: HTTP2ReceivedRequest, fields: [(name: String, value: String)]
    ) throws(FuzzFailure) {
        let method = pseudo(":method", in: fields)
        try check(method.map(FuzzBytes.isToken) == true, "method missing or not a token")
        if request.head.method == .connect && request.extendedProtocol == nil {
            try check(
                pseudo(":scheme", in: fields) == nil && pseudo(":path", in: fields) == nil
                    && pseudo(":authority", in: fields) != nil,
                "malformed CONNECT accepted")
        } else {
            guard let scheme = pseudo(":scheme", in: fields), let path = pseudo(":path", in: fields) else {
                throw failure("no :scheme or :path")
            }
            try check(!scheme.isEmpty && scheme.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "invalid :scheme")
            try check(
                FuzzBytes.hasPrefix(path, "/") || (path == "*" && request.head.method == .options),
                "invalid :path \(path)")
            try check(path.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F }, ":path with spaces or controls")
        }
        for field in fields where !FuzzBytes.hasPrefix(field.name, ":") {
            try check(
                FuzzBytes.isToken(field.name) && field.name == field.name.lowercased(),
                "field name not a lower-case token: \(field.name)")
            try check(
                FuzzBytes.isCleanFieldValue(field.value), "field value not clean: \(field.value.debugDescription)")
            try check(!connectionSpecific.contains(field.name), "connection-specific field \(field.name)")
            if field.name == "te" {
                try check(FuzzBytes.asciiLowercased(field.value) == "trailers", "te other than trailers")
            }
        }
        try check(fields.filter { $0.name == "host" }.count <= 1, "more than one host")
    }

    /// The HTTP/1.1 form against the fields it was built from.
    static func checkConverted(
        _ request: HTTP2ReceivedRequest, fields: [(name: String, value: String)]
    ) throws(FuzzFailure) {
        let converted = request.head
        let host = pseudo(":authority", in: fields) ?? fields.first { $0.name == "host" }?.value
        guard let first = converted.headers.first(where: { _ in true }) else { throw failure("no fields at all") }
        try check(first.name == "Host" && first.value == host, "Host is not the first field, or not :authority")
        try check(converted.headers["host"].count == 1, "not exactly one Host")
        try check(
            converted.method.rawValue == pseudo(":method", in: fields) && converted.version == .http2,
            "method or version changed")
        if converted.method == .connect && request.extendedProtocol == nil {
            try check(converted.target == host, "CONNECT target is not the authority")
        } else {
            try check(converted.target == pseudo(":path", in: fields), "target is not :path")
        }
        try check(request.extendedProtocol == pseudo(":protocol", in: fields), ":protocol changed")
        var cookieFields = 0
        for field in converted.headers {
            let name = FuzzBytes.asciiLowercased(field.name)
            try check(
                !FuzzBytes.hasPrefix(name, ":") && name != "te" && !connectionSpecific.contains(name),
                "forwarded a field HTTP/1.1 must not get: \(field.name)")
            if name == "cookie" { cookieFields += 1 }
        }
        let cookies = fields.filter { $0.name == "cookie" }.map(\.value)
        try check(cookieFields == (cookies.isEmpty ? 0 : 1), "cookies not joined into one field")
        if !cookies.isEmpty {
            try check(converted.headers.first(name: "cookie") == cookies.joined(separator: "; "), "cookies changed")
        }
        let kept = fields.filter { field in
            !FuzzBytes.hasPrefix(field.name, ":") && !["host", "te", "cookie"].contains(field.name)
        }.map { HTTPFields.Field(name: $0.name, value: $0.value) }
        let forwarded = converted.headers.filter { !["host", "cookie"].contains(FuzzBytes.asciiLowercased($0.name)) }
        try check(kept == forwarded, "regular fields changed in the conversion")
    }

    /// Written as HTTP/1.1, the head is refused by the serializer or parsed back to exactly itself.
    static func checkRoundTrip(_ converted: HTTPRequestHead) throws(FuzzFailure) {
        var wire: [UInt8] = []
        do {
            try HTTP1Serializer.writeRequestHead(converted, into: &wire)
        } catch {
            return
        }
        var parser = HTTP1RequestParser()
        parser.append(wire)
        switch parser.next() {
        case .head(let head, _)?:
            // The parser drops whitespace around a value (a cookie list whose last cookie was empty ends in "; ").
            // Trimmed as bytes: a value's bytes that are not UTF-8 (obs-text) go on as received, and would read as
            // U+FFFD through a string.
            var expected = converted
            expected.headers = HTTPFields()
            converted.headers.forEachField { token, name, value in
                expected.headers.addValidated(name: name, value: trimmingWhitespace(value), token: token)
            }
            try check(head == expected, "the HTTP/1.1 request parses as another head: \(converted) -> \(head)")
            try check(parser.bufferedByteCount == 0, "bytes left after the head: a second request could follow")
        case .error?:
            return
        case .body?, .end?, nil:
            throw failure("a serialised head is incomplete")
        }
    }

    /// `value` without leading and trailing spaces and tabs.
    static func trimmingWhitespace(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard let first = value.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = value.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: value[first...last])
    }
}
