import HTTPWire

/// Serialises a response head for one HTTP/1.x connection in one pass over the handler's fields: drops the
/// connection-level fields the handler may not set (`Connection`, `Keep-Alive`, `Transfer-Encoding`), frames the body
/// (`Content-Length` for in-memory bodies, chunked or close-delimited for streams) and adds `Date` and `Connection`.
struct HTTP1ResponseHeadWriter {
    /// How the body follows the head.
    enum Framing {
        /// Nothing follows (HEAD, 1xx/204/304, or an empty body).
        case none
        /// The in-memory body follows as is.
        case bytes
        /// A streamed body follows; `chunked` when it is chunk-framed.
        case stream(chunked: Bool)
    }

    /// The head's bytes, then the framing decided; `keepAlive` is cleared when the body is close-delimited.
    /// `dateFieldLine` is the whole `Date` line to add when the handler set none (see ``HTTPDateCache``).
    static func write(
        _ response: HTTPServerResponse, version: HTTPVersion, isHead: Bool, keepAlive: inout Bool,
        dateFieldLine: [UInt8], into output: inout [UInt8]
    ) throws(HTTP1SerializationError) -> Framing {
        var head = response.head
        head.version = version >= .http1_1 ? .http1_1 : .http1_0
        let forbidsBody = head.statusForbidsBody
        try HTTP1Serializer.writeStatusLine(head, into: &output)
        var bodyLength: Int?
        if case .bytes(let body) = response.body { bodyLength = body.count }
        var hasDate = false
        var hasLength = false
        let headers = head.headers
        for index in 0..<headers.count {
            switch headers.token(at: index) {
            case .contentLength:
                if forbidsBody || hasLength { continue }
                hasLength = true
                if let bodyLength {
                    HTTP1Serializer.writeContentLength(bodyLength, into: &output)
                    continue
                }
            case .connection, .keepAlive, .transferEncoding:
                continue
            case .date:
                hasDate = true
            default:
                break
            }
            try HTTP1Serializer.writeField(at: index, of: headers, into: &output)
        }
        if !hasDate { output.append(contentsOf: dateFieldLine) }
        let bodyAllowed = !isHead && !forbidsBody
        var framing = Framing.none
        switch response.body {
        case .none:
            if bodyAllowed && !hasLength { HTTP1Serializer.writeContentLength(0, into: &output) }
        case .bytes(let body):
            if !forbidsBody && !hasLength {
                HTTP1Serializer.writeContentLength(body.count, into: &output)
            }
            if bodyAllowed { framing = .bytes }
        case .stream:
            if bodyAllowed {
                if hasLength {
                    framing = .stream(chunked: false)
                } else if head.version == .http1_1 {
                    try HTTP1Serializer.writeField(name: "Transfer-Encoding", value: "chunked", into: &output)
                    framing = .stream(chunked: true)
                } else {
                    keepAlive = false
                    framing = .stream(chunked: false)
                }
            }
        }
        if !keepAlive {
            try HTTP1Serializer.writeField(name: "Connection", value: "close", into: &output)
        } else if version == .http1_0 {
            try HTTP1Serializer.writeField(name: "Connection", value: "keep-alive", into: &output)
        }
        HTTP1Serializer.writeEndOfHead(into: &output)
        return framing
    }

    /// The head of a `101 Switching Protocols`: the handler's fields (its `Upgrade` among them) without the framing
    /// and connection fields, `Date`, and `Connection: Upgrade`. Nothing HTTP/1 follows it.
    static func writeSwitchingProtocols(
        _ head: HTTPResponseHead, dateFieldLine: [UInt8],
        into output: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        var head = head
        head.version = .http1_1
        try HTTP1Serializer.writeStatusLine(head, into: &output)
        var hasDate = false
        let headers = head.headers
        for index in 0..<headers.count {
            switch headers.token(at: index) {
            case .contentLength, .connection, .keepAlive, .transferEncoding: continue
            case .date: hasDate = true
            default: break
            }
            try HTTP1Serializer.writeField(at: index, of: headers, into: &output)
        }
        if !hasDate { output.append(contentsOf: dateFieldLine) }
        try HTTP1Serializer.writeField(name: "Connection", value: "Upgrade", into: &output)
        HTTP1Serializer.writeEndOfHead(into: &output)
    }
}
