import HTTPWire

/// The head an exchange's request is sent with: the request's own fields (its framing fields dropped), `Host` when it
/// has none, and the body's framing: `Content-Length` when there is a body or the method expects one,
/// `Transfer-Encoding: chunked` for a streamed body of unknown length.
///
/// HTTP/1.1 writes it straight from the exchange's request (``writeHead(into:)``), without building a second field list
/// or copying the request; HTTP/2 asks for it as an ``HTTPRequestHead``.
extension HTTPClientExchange {
    /// Calls `visit` with each field of the head, in order.
    func forEachHeadField<Failure: Error>(_ visit: (String, String) throws(Failure) -> Void) throws(Failure) {
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
    func writeHead(into buffer: inout [UInt8]) throws(HTTP1SerializationError) {
        try HTTP1Serializer.writeRequestLine(method: request.method, target: request.target, version: .http1_1,
                                             into: &buffer)
        try forEachHeadField { (name, value) throws(HTTP1SerializationError) in
            try HTTP1Serializer.writeField(name: name, value: value, into: &buffer)
        }
        HTTP1Serializer.writeEndOfHead(into: &buffer)
    }

    /// The head as a value (for HTTP/2).
    var requestHead: HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headers.count + 2)
        forEachHeadField { (name, value) in headers.add(name: name, value: value) }
        return HTTPRequestHead(method: request.method, target: request.target, version: .http1_1, headers: headers)
    }
}
