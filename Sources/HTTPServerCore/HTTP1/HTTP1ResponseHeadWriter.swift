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
    ///
    /// The head is assembled in one pass (status line, the handler's fields, the added lines) in a temporary region
    /// and appended to `output` at once.
    static func write(
        _ response: HTTPServerResponse, version: HTTPVersion, isHead: Bool, keepAlive: inout Bool,
        dateFieldLine: [UInt8], into output: inout [UInt8]
    ) throws(HTTP1SerializationError) -> Framing {
        let headVersion: HTTPVersion = version >= .http1_1 ? .http1_1 : .http1_0
        let forbidsBody = response.head.statusForbidsBody
        let bodyAllowed = !isHead && !forbidsBody
        var bodyLength: Int?
        var isStream = false
        switch response.body {
        case .none: break
        case .bytes(let body): bodyLength = body.count
        case .stream: isStream = true
        }
        // Room for the status line, every field, the Date line, one Content-Length line (written in place of the
        // handler's or added), `Transfer-Encoding: chunked`, a Connection line and the empty line.
        let capacity =
            HTTP1HeadAssembly.statusLineCapacity(reason: response.head.reason)
            &+ HTTP1HeadAssembly.fieldsCapacity(response.head.headers) &+ dateFieldLine.count
            &+ HTTP1HeadAssembly.contentLengthCapacity &+ 28 &+ 24 &+ 2
            &+ (response.requestID.map {
                HTTPServerResponse.requestIDFieldName.utf8CodeUnitCount &+ $0.utf8.count &+ 4
            } ?? 0)
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) {
            region throws(HTTP1SerializationError) -> Framing in
            var assembly = HTTP1HeadAssembly(region)
            assembly.appendStatusLine(status: response.head.status, reason: response.head.reason, version: headVersion)
            let (hasDate, hasLength) = assembly.appendResponseFields(
                of: response.head.headers, forbidsBody: forbidsBody, bodyLength: bodyLength)
            if let requestID = response.requestID {
                assembly.appendField(knownName: HTTPServerResponse.requestIDFieldName, value: requestID)
            }
            if !hasDate { assembly.append(dateFieldLine) }
            var framing = Framing.none
            if isStream {
                if bodyAllowed {
                    if hasLength {
                        framing = .stream(chunked: false)
                    } else if headVersion == .http1_1 {
                        assembly.append("Transfer-Encoding: chunked\r\n")
                        framing = .stream(chunked: true)
                    } else {
                        keepAlive = false
                        framing = .stream(chunked: false)
                    }
                }
            } else if let bodyLength {
                if !forbidsBody && !hasLength { assembly.appendContentLength(bodyLength) }
                if bodyAllowed { framing = .bytes }
            } else if bodyAllowed && !hasLength {
                assembly.appendContentLength(0)
            }
            if !keepAlive {
                assembly.append("Connection: close\r\n")
            } else if version == .http1_0 {
                assembly.append("Connection: keep-alive\r\n")
            }
            assembly.appendEndOfHead()
            try assembly.finish(into: &output)
            return framing
        }
    }

    /// The head of a `101 Switching Protocols`: the handler's fields (its `Upgrade` among them) without the framing
    /// and connection fields, `Date`, and `Connection: Upgrade`. Nothing HTTP/1 follows it.
    static func writeSwitchingProtocols(
        _ head: HTTPResponseHead, dateFieldLine: [UInt8],
        into output: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        let capacity =
            HTTP1HeadAssembly.statusLineCapacity(reason: head.reason) &+ HTTP1HeadAssembly.fieldsCapacity(head.headers)
            &+ dateFieldLine.count &+ 21 &+ 2
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) {
            region throws(HTTP1SerializationError) in
            var assembly = HTTP1HeadAssembly(region)
            assembly.appendStatusLine(status: head.status, reason: head.reason, version: .http1_1)
            var hasDate = false
            assembly.appendFields(of: head.headers) { token in
                switch token {
                case .contentLength, .connection, .keepAlive, .transferEncoding:
                    return .skip
                case .date:
                    hasDate = true
                    return .write
                default:
                    return .write
                }
            }
            if !hasDate { assembly.append(dateFieldLine) }
            assembly.append("Connection: Upgrade\r\n")
            assembly.appendEndOfHead()
            try assembly.finish(into: &output)
        }
    }
}
