import HTTPWire

/// The head a client request is sent with: its own fields (its framing fields dropped), `Host` when it has none, and
/// the body's framing: `Content-Length` when there is a body or the method expects one, `Transfer-Encoding: chunked`
/// for a streamed body of unknown length.
///
/// HTTP/1.1 writes it straight from the request (``write(into:)``), without building a second field list; HTTP/2 asks
/// for it as an ``HTTPRequestHead``.
struct UpstreamRequestHead {
    let request: HTTPClientRequest
    /// The body's length; nil when it is streamed without one (chunked).
    let bodyLength: Int64?

    /// Calls `visit` with each field of the head, in order.
    func forEachField<Failure: Error>(_ visit: (String, String) throws(Failure) -> Void) throws(Failure) {
        var hasHost = false
        for field in request.headers {
            let name = field.name
            if name.equalsIgnoringASCIICase("Transfer-Encoding") || name.equalsIgnoringASCIICase("Content-Length") {
                continue
            }
            if !hasHost && name.equalsIgnoringASCIICase("Host") { hasHost = true }
            try visit(name, field.value)
        }
        if !hasHost { try visit("Host", request.origin.hostHeader) }
        if let bodyLength {
            if bodyLength > 0 || request.method == .post || request.method == .put || request.method == .patch {
                try visit("Content-Length", String(bodyLength))
            }
        } else {
            try visit("Transfer-Encoding", "chunked")
        }
    }

    /// The head as HTTP/1.1 bytes.
    func write(into buffer: inout [UInt8]) throws(HTTP1SerializationError) {
        try HTTP1Serializer.writeRequestLine(method: request.method, target: request.target, version: .http1_1,
                                             into: &buffer)
        try forEachField { (name, value) throws(HTTP1SerializationError) in
            try HTTP1Serializer.writeField(name: name, value: value, into: &buffer)
        }
        HTTP1Serializer.writeEndOfHead(into: &buffer)
    }

    /// The head as a value (for HTTP/2).
    var head: HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 2)
        forEachField { (name, value) in headers.add(name: name, value: value) }
        return HTTPRequestHead(method: request.method, target: request.target, version: .http1_1, headers: headers)
    }
}
