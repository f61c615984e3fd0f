import HTTPWire

/// `h2-fields`: a decoded HTTP/2 request header block through `HTTP2Validation.validateRequest` (RFC 9113 §8.2–8.3)
/// and the conversion `HTTP2RequestHead.toHTTP1Request()` that an HTTP/1.1 upstream gets.
///
/// Input: one field per line (LF), name and value split at the first TAB, as UTF-8 (invalid bytes become U+FFFD, as
/// `HTTP2Session` decodes them). Trailer validation gets the same fields.
///
/// Checked: a validated request has a token method, a valid `:scheme` and `:path` (or is a plain CONNECT with only
/// `:authority`), lower-case token field names, clean values and no connection-specific field; it always converts;
/// the HTTP/1.1 head has exactly one Host, first, equal to `:authority` (or `host`), no pseudo-header, `te` or
/// connection-specific field, at most one cookie field holding every cookie in order; and written by
/// `HTTP1Serializer` it is either refused or parsed back by `HTTP1RequestParser` to exactly itself (no field or
/// request can be smuggled through the conversion).
enum HTTP2FieldsTarget {
    static let target = FuzzTarget(
        name: "h2-fields",
        summary: "HTTP/2 request header validation and the HTTP/1.1 conversion, with a serializer/parser round trip",
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
        guard case .success(let head) = HTTP2Validation.validateRequest(fields) else { return }
        try checkValidated(head, fields: fields)
        let converted: HTTPRequestHead
        do {
            converted = try head.toHTTP1Request()
        } catch {
            throw failure("a validated request does not convert: \(error.reason)")
        }
        try checkConverted(converted, from: head, fields: fields)
        try checkRoundTrip(converted)
    }

    static func checkValidated(
        _ head: HTTP2RequestHead,
        fields: [(name: String, value: String)]
    ) throws(FuzzFailure) {
        try check(FuzzBytes.isToken(head.method.rawValue), "method is not a token")
        if head.method == .connect && head.extendedProtocol == nil {
            try check(head.scheme == nil && head.path == nil && head.authority != nil, "malformed CONNECT accepted")
        } else {
            guard let scheme = head.scheme, let path = head.path else { throw failure("no :scheme or :path") }
            try check(!scheme.isEmpty && scheme.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "invalid :scheme")
            try check(
                FuzzBytes.hasPrefix(path, "/") || (path == "*" && head.method == .options), "invalid :path \(path)")
            try check(path.utf8.allSatisfy { $0 > 0x20 && $0 != 0x7F }, ":path with spaces or controls")
        }
        try check(
            head.headers.count == fields.filter { !FuzzBytes.hasPrefix($0.name, ":") }.count, "regular fields lost")
        for field in head.headers {
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
        try check(head.headers["host"].count <= 1, "more than one host")
    }

    static func checkConverted(
        _ converted: HTTPRequestHead, from head: HTTP2RequestHead,
        fields: [(name: String, value: String)]
    ) throws(FuzzFailure) {
        let host = head.authority ?? head.headers.first(name: "host")
        guard let first = converted.headers.first(where: { _ in true }) else { throw failure("no fields at all") }
        try check(first.name == "Host" && first.value == host, "Host is not the first field, or not :authority")
        try check(converted.headers["host"].count == 1, "not exactly one Host")
        try check(converted.method == head.method && converted.version == .http1_1, "method or version changed")
        if head.method == .connect && head.extendedProtocol == nil {
            try check(converted.target == host, "CONNECT target is not the authority")
        } else {
            try check(converted.target == head.path, "target is not :path")
        }
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
        let kept = head.headers.filter { field in
            !["host", "te", "cookie"].contains(field.name) && !connectionSpecific.contains(field.name)
        }
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
            var expected = converted
            expected.headers = HTTPFields(converted.headers.map { ($0.name, trimmingWhitespace($0.value)) })
            try check(head == expected, "the HTTP/1.1 request parses as another head: \(converted) -> \(head)")
            try check(parser.bufferedByteCount == 0, "bytes left after the head: a second request could follow")
        case .error?:
            return
        case .body?, .end?, nil:
            throw failure("a serialised head is incomplete")
        }
    }

    /// `value` without leading and trailing spaces and tabs.
    static func trimmingWhitespace(_ value: String) -> String {
        let bytes = Array(value.utf8)
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
            let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
