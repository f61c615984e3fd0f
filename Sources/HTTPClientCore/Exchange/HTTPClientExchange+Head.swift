import HTTPWire

/// The head an exchange's request is sent with: the request's own fields (its framing fields dropped), `Host` when it
/// has none, and the body's framing: `Content-Length` when there is a body or the method expects one,
/// `Transfer-Encoding: chunked` for a streamed body of unknown length.
///
/// HTTP/1.1 writes it straight from the exchange's request (``writeHead(into:)``), without building a second field list
/// or copying the request; HTTP/2 asks for it as an ``HTTPRequestHead``.
extension HTTPClientExchange {
    /// The head as HTTP/1.1 bytes: the request's fields in order, copied from their bytes, without its framing
    /// fields; then the ones the exchange adds (``writeAddedFields(hasHost:_:)``). `hostField`, the origin's `Host`
    /// field line already written (see ``HTTPOriginPool/hostField``), is copied in when the request has no `Host`.
    func writeHead(into buffer: inout [UInt8], hostField: [UInt8]? = nil) throws(HTTP1SerializationError) {
        try HTTP1Serializer.writeRequestLine(
            method: request.method, target: request.target, version: .http1_1,
            into: &buffer)
        var hasHost = false
        try HTTP1Serializer.writeFields(of: request.headers, into: &buffer) { token in
            switch token {
            case .transferEncoding, .contentLength: return false
            case .host: hasHost = true
            default: break
            }
            return true
        }
        if !hasHost, let hostField {
            buffer.append(contentsOf: hostField)
            hasHost = true
        }
        try writeAddedFields(hasHost: hasHost) { (name, value) throws(HTTP1SerializationError) in
            try HTTP1Serializer.writeField(name: name, value: value, into: &buffer)
        }
        HTTP1Serializer.writeEndOfHead(into: &buffer)
    }

    /// The head as a value (for HTTP/2): the request's fields as ``writeHead(into:)`` chooses them, as bytes.
    var requestHead: HTTPRequestHead {
        var headers = HTTPFields()
        let fields = request.headers
        headers.reserveCapacity(fields.count + 2)
        var hasHost = false
        for index in 0..<fields.count {
            switch fields.token(at: index) {
            case .transferEncoding, .contentLength: continue
            case .host: hasHost = true
            default: break
            }
            headers.add(fieldAt: index, of: fields)
        }
        writeAddedFields(hasHost: hasHost) { (name, value) in headers.add(name: name, value: value) }
        return HTTPRequestHead(method: request.method, target: request.target, version: .http1_1, headers: headers)
    }

    /// The fields the exchange adds after the request's: `Host` when the request has none, and the body's framing.
    private func writeAddedFields<Failure: Error>(
        hasHost: Bool, _ visit: (String, String) throws(Failure) -> Void
    ) throws(Failure) {
        if !hasHost { try visit("Host", request.origin.hostHeader) }
        if let bodyLength {
            if bodyLength > 0 || Self.expectsBody(request.method) {
                try visit("Content-Length", String(bodyLength))
            }
        } else {
            try visit("Transfer-Encoding", "chunked")
        }
    }

    /// Whether a request with `method` is expected to carry a body (POST, PUT, PATCH), so an empty one is sent with
    /// `Content-Length: 0`. GET, the usual method, is ruled out first: equal strings compare by their bits, at once,
    /// where different ones go through the string comparison.
    private static func expectsBody(_ method: HTTPMethod) -> Bool {
        method != .get && (method == .post || method == .put || method == .patch)
    }
}
