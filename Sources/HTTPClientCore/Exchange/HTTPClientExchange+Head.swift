import HTTPWire

/// The head an exchange's request is sent with: the request's own fields (its framing fields dropped), `Host` when it
/// has none, and the body's framing: `Content-Length` when there is a body or the method expects one,
/// `Transfer-Encoding: chunked` for a streamed body of unknown length.
///
/// HTTP/1.1 writes it straight from the exchange's request (``writeHead(into:)``), without building a second field list
/// or copying the request; HTTP/2 asks for it as an ``HTTPRequestHead``.
extension HTTPClientExchange {
    /// The head as HTTP/1.1 bytes: the request's fields in order, copied from their bytes, without its framing
    /// fields; then `Host` when the request has none and the body's framing (``addedFraming``). `hostField`, the
    /// origin's `Host` field line already written (see ``HTTPOriginPool/hostField``), is the `Host` line then.
    /// The head is assembled in one temporary region and appended to `buffer` at once.
    func writeHead(into buffer: inout [UInt8], hostField: [UInt8]? = nil) throws(HTTP1SerializationError) {
        let request = self.request
        let hostRoom =
            hostField?.count ?? HTTP1HeadAssembly.fieldCapacity(name: "Host", value: request.origin.hostHeader)
        let capacity =
            HTTP1HeadAssembly.requestLineCapacity(method: request.method, target: request.target)
            &+ HTTP1HeadAssembly.fieldsCapacity(request.headers) &+ hostRoom
            &+ HTTP1HeadAssembly.contentLengthCapacity &+ 2
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) {
            region throws(HTTP1SerializationError) in
            var assembly = HTTP1HeadAssembly(region)
            assembly.appendRequestLine(method: request.method, target: request.target, version: .http1_1)
            var hasHost = false
            assembly.appendFields(of: request.headers) { token in
                switch token {
                case .transferEncoding, .contentLength: return .skip
                case .host: hasHost = true
                default: break
                }
                return .write
            }
            if !hasHost, let hostField {
                assembly.append(hostField)
            } else if !hasHost {
                assembly.appendField(name: "Host", value: request.origin.hostHeader)
            }
            switch addedFraming {
            case .none: break
            case .contentLength(let length): assembly.appendContentLength(Int(length))
            case .chunked: assembly.append("Transfer-Encoding: chunked\r\n")
            }
            assembly.appendEndOfHead()
            try assembly.finish(into: &buffer)
        }
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
        if !hasHost { headers.add(name: "Host", value: request.origin.hostHeader) }
        switch addedFraming {
        case .none: break
        case .contentLength(let length): headers.add(name: "Content-Length", value: String(length))
        case .chunked: headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        return HTTPRequestHead(method: request.method, target: request.target, version: .http1_1, headers: headers)
    }

    /// The framing field the exchange adds after the request's fields.
    private enum AddedFraming {
        /// None: an empty body of a method that expects none.
        case none
        /// `Content-Length`: a body of known length, or an empty one of a method that expects a body.
        case contentLength(Int64)
        /// `Transfer-Encoding: chunked`: a streamed body of unknown length.
        case chunked
    }

    private var addedFraming: AddedFraming {
        guard let bodyLength else { return .chunked }
        return bodyLength > 0 || Self.expectsBody(request.method) ? .contentLength(bodyLength) : .none
    }

    /// Whether a request with `method` is expected to carry a body (POST, PUT, PATCH), so an empty one is sent with
    /// `Content-Length: 0`. GET, the usual method, is ruled out first: equal strings compare by their bits, at once,
    /// where different ones go through the string comparison.
    private static func expectsBody(_ method: HTTPMethod) -> Bool {
        method != .get && (method == .post || method == .put || method == .patch)
    }
}
