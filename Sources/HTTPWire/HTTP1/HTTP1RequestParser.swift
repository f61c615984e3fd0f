/// A strict, incremental HTTP/1.0 and HTTP/1.1 request parser (RFC 9112) for a server connection.
///
/// Feed received bytes with ``append(_:)`` and pull events with ``next()`` until it returns
/// nil. Each request yields `.head`, zero or more `.body` and `.end`; pipelined requests follow in order.
///
/// The parser refuses everything that could make two HTTP implementations disagree on where a message ends
/// (request smuggling): Content-Length together with Transfer-Encoding, repeated or malformed Content-Length,
/// transfer codings other than a single `chunked`, bare CR, obs-fold, whitespace before a colon, malformed chunk
/// lines. It is deliberately stricter than RFC 9112 in two places: a bare LF ending a request or header line is
/// rejected (§2.2 allows accepting it), and chunk extensions may not contain whitespace (BWS).
/// Leading empty lines (CRLF or LF) before a request line are skipped, at most eight per request.
///
/// After `.error` the byte stream cannot be framed any more: the caller must answer the error's status with
/// `Connection: close` and close the connection. Nothing here traps on any input.
package struct HTTP1RequestParser: Sendable {
    private enum State: Sendable {
        case start
        case requestLine
        case headers
        case body
        case failed(HTTP1ParseError)
    }

    /// The most empty lines skipped before a request line.
    static let maxLeadingEmptyLines = 8

    private let limits: HTTP1ParserLimits
    private var buffer = HTTP1ByteBuffer()
    private var state: State = .start
    private var scanned = 0
    private var emptyLines = 0

    // The head being parsed.
    private var method = HTTPMethod.get
    private var target = ""
    private var version = HTTPVersion.http1_1
    private var fields = HTTP1FieldSectionReader()

    private var body = HTTP1BodyDecoder(state: .finished, maxBodyBytes: 0, maxTrailerBytes: 0, maxTrailers: 0)

    /// Creates a parser enforcing `limits`.
    package init(limits: HTTP1ParserLimits = .init()) {
        self.limits = limits
    }

    /// Adds received bytes. They are copied into the parser's own buffer (and dropped after an error).
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if case .failed = state { return }
        buffer.append(bytes)
    }

    /// Adds received bytes. They are copied into the parser's own buffer (and dropped after an error).
    package mutating func append(_ bytes: [UInt8]) {
        if case .failed = state { return }
        buffer.append(bytes)
    }

    /// Bytes received and not yet returned in an event.
    package var bufferedByteCount: Int { buffer.readableCount }

    /// Hands over the bytes received and not yet parsed, leaving none: after a request that switched protocols
    /// (`101 Switching Protocols`), what follows its head is the new protocol's, not HTTP/1.
    package mutating func takeBufferedBytes() -> [UInt8] {
        buffer.read(buffer.readableCount)
    }

    /// Whether received bytes are waiting to be parsed (for example a pipelined request after `.end`).
    package var hasBufferedRequestBytes: Bool { buffer.readableCount > 0 }

    /// Whether a request has started and not ended: true once any byte beyond leading empty lines arrived, until
    /// the request's `.end`; also true after an error. A connection closed while this is false lost nothing.
    package var isMidRequest: Bool {
        switch state {
        case .start:
            return buffer.withReadableBytes { bytes in
                bytes.contains { $0 != HTTP1Grammar.cr && $0 != HTTP1Grammar.lf }
            }
        case .requestLine, .headers, .body, .failed:
            return true
        }
    }

    /// The next event, or nil when more bytes are needed.
    package mutating func next() -> HTTP1RequestEvent? {
        while true {
            switch state {
            case .failed(let error):
                return .error(error)

            case .start:
                guard let first = buffer.byte(at: 0) else { return nil }
                if first == HTTP1Grammar.lf {
                    buffer.consume(1)
                } else if first == HTTP1Grammar.cr {
                    guard let second = buffer.byte(at: 1) else { return nil }
                    guard second == HTTP1Grammar.lf else { return fail(.badRequest("bare CR before the request line")) }
                    buffer.consume(2)
                } else {
                    state = .requestLine
                    continue
                }
                emptyLines += 1
                if emptyLines > Self.maxLeadingEmptyLines {
                    return fail(.badRequest("too many empty lines before the request line"))
                }

            case .requestLine:
                if let event = parseRequestLine() { return event }
                if case .requestLine = state { return nil }

            case .headers:
                if let event = parseHeaderLines() { return event }
                if case .headers = state { return nil }

            case .body:
                switch body.step(&buffer, eof: false) {
                case .body(let bytes):
                    return .body(bytes)
                case .end:
                    state = .start
                    emptyLines = 0
                    return .end
                case .needMore:
                    return nil
                case .error(let error):
                    return fail(error)
                }
            }
        }
    }

    private mutating func fail(_ error: HTTP1ParseError) -> HTTP1RequestEvent {
        state = .failed(error)
        buffer.consumeAll()
        fields.reset()
        return .error(error)
    }

    /// Parses the request line if it is complete. Returns an event only on error.
    private mutating func parseRequestLine() -> HTTP1RequestEvent? {
        let limit = limits.maxRequestLineBytes
        var scanned = self.scanned
        typealias Parsed = (method: HTTPMethod, target: String, version: HTTPVersion)
        let outcome: (result: Result<Parsed, HTTP1ParseError>, consumed: Int)? = buffer.withReadableBytes { bytes in
            let tooLong = HTTP1ParseError(status: 414, reason: "request line too long")
            guard let lfOffset = HTTP1Grammar.findLineFeed(bytes, scanned: &scanned) else {
                return bytes.count > limit &+ 1 ? (.failure(tooLong), 0) : nil
            }
            if lfOffset > limit &+ 1 { return (.failure(tooLong), 0) }
            guard let line = HTTP1Grammar.lineContent(bytes, lfOffset: lfOffset) else {
                return (.failure(.badRequest("request line not ended by CRLF, or bare CR")), 0)
            }
            if line.count > limit { return (.failure(tooLong), 0) }
            return (Self.parseRequestLine(line), lfOffset + 1)
        }
        self.scanned = scanned
        // Consumed, so that the parsed strings move into the parser rather than being copied and then released.
        switch consume outcome {
        case nil:
            return nil
        case (.failure(let error), _)?:
            return fail(error)
        case (.success(let parsed), let consumed)?:
            buffer.consume(consumed)
            method = parsed.method
            target = parsed.target
            version = parsed.version
            state = .headers
            return nil
        }
    }

    /// `method SP request-target SP HTTP-version`, single spaces only.
    static func parseRequestLine(
        _ line: UnsafeRawBufferPointer
    ) -> Result<(method: HTTPMethod, target: String, version: HTTPVersion), HTTP1ParseError> {
        guard let firstSpace = line.firstIndex(of: HTTP1Grammar.sp) else {
            return .failure(.badRequest("malformed request line"))
        }
        let afterMethod = firstSpace + 1
        guard let secondSpace = line[afterMethod...].firstIndex(of: HTTP1Grammar.sp) else {
            return .failure(.badRequest("missing HTTP version (HTTP/0.9 is not supported)"))
        }
        let methodBytes = UnsafeRawBufferPointer(rebasing: line[0..<firstSpace])
        let targetBytes = UnsafeRawBufferPointer(rebasing: line[afterMethod..<secondSpace])
        let versionBytes = UnsafeRawBufferPointer(rebasing: line[(secondSpace + 1)...])

        let version: HTTPVersion
        switch parseVersion(versionBytes) {
        case .success(let parsed): version = parsed
        case .failure(let error): return .failure(error)
        }
        guard HTTP1Grammar.isToken(methodBytes) else { return .failure(.badRequest("invalid method")) }
        let method = HTTPMethod.of(methodBytes)
        guard !targetBytes.isEmpty else { return .failure(.badRequest("empty request target")) }
        for byte in targetBytes where byte < 0x21 || byte > 0x7E || byte == 0x23 {
            return .failure(.badRequest("invalid character in request target"))
        }
        let target = HTTP1Grammar.string(targetBytes)
        if method == .connect {
            // authority-form only: host ":" port.
            guard let colon = targetBytes.lastIndex(of: HTTP1Grammar.colon), colon + 1 < targetBytes.count,
                targetBytes.first != 0x2F, HTTP1Grammar.isValidHost(target)
            else { return .failure(.badRequest("CONNECT needs an authority-form target")) }
        } else if targetBytes[0] == 0x2F {
            // origin-form
        } else if targetBytes.count == 1 && targetBytes[0] == 0x2A {
            guard method == .options else { return .failure(.badRequest("asterisk-form target is only for OPTIONS")) }
        } else if !hasHTTPScheme(targetBytes) {
            return .failure(.badRequest("invalid request target form"))
        }
        return .success((method, target, version))
    }

    /// Whether `target` is absolute-form with an `http` or `https` scheme (any case) and something after `://`.
    private static func hasHTTPScheme(_ target: UnsafeRawBufferPointer) -> Bool {
        for prefix: StaticString in ["http://", "https://"] {
            let length = prefix.utf8CodeUnitCount
            if target.count > length,
                HTTP1Grammar.equalsLowercase(UnsafeRawBufferPointer(rebasing: target[0..<length]), prefix)
            {
                return true
            }
        }
        return false
    }

    /// `HTTP/1.0` and `HTTP/1.1`; `HTTP/1.2`...`HTTP/1.9` are read as 1.1 (RFC 9110 §2.5); other majors get 505.
    static func parseVersion(_ bytes: UnsafeRawBufferPointer) -> Result<HTTPVersion, HTTP1ParseError> {
        guard bytes.count == 8, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50,
            bytes[4] == 0x2F,
            HTTP1Grammar.isDigit(bytes[5]), bytes[6] == 0x2E, HTTP1Grammar.isDigit(bytes[7])
        else { return .failure(.badRequest("malformed HTTP version")) }
        let major = bytes[5] &- 0x30
        let minor = bytes[7] &- 0x30
        guard major == 1 else { return .failure(HTTP1ParseError(status: 505, reason: "HTTP version not supported")) }
        return .success(minor == 0 ? .http1_0 : .http1_1)
    }

    /// Parses complete header lines. Returns the head (or an error) once the empty line arrived.
    private mutating func parseHeaderLines() -> HTTP1RequestEvent? {
        switch fields.read(&buffer, maxBytes: limits.maxHeaderBytes, maxFields: limits.maxHeaders, sizeStatus: 431) {
        case .needMore: return nil
        case .error(let error): return fail(error)
        case .complete: return finishHead()
        }
    }

    /// Validates Host and the body framing of the complete head and emits it.
    private mutating func finishHead() -> HTTP1RequestEvent {
        let framing: HTTP1BodyFraming
        switch Self.framing(version: version, fields: fields, maxBodyBytes: limits.maxBodyBytes) {
        case .success(let value): framing = value
        case .failure(let error): return fail(error)
        }
        let hosts = fields.hostValues
        if hosts.count > 1 { return fail(.badRequest("more than one Host header")) }
        if hosts.isEmpty && version >= .http1_1 { return fail(.badRequest("missing Host header")) }
        if let host = hosts.first, !fields.withValue(at: host, HTTP1Grammar.isValidHost(bytes:)) {
            return fail(.badRequest("invalid Host header"))
        }

        let head = HTTPRequestHead(method: method, target: target, version: version, headers: fields.headers)
        switch framing {
        case .none:
            body = HTTP1BodyDecoder(state: .finished, maxBodyBytes: 0, maxTrailerBytes: 0, maxTrailers: 0)
        case .contentLength(let length):
            body = HTTP1BodyDecoder(
                state: .contentLength(remaining: length), maxBodyBytes: limits.maxBodyBytes,
                maxTrailerBytes: 0, maxTrailers: 0)
        case .chunked:
            body = HTTP1BodyDecoder(
                state: .chunkSizeLine, maxBodyBytes: limits.maxBodyBytes,
                maxTrailerBytes: limits.maxHeaderBytes, maxTrailers: limits.maxHeaders)
        }
        resetHead()
        state = .body
        return .head(head, framing)
    }

    private mutating func resetHead() {
        target = ""
        fields.reset()
    }

    /// RFC 9112 §6.1-6.3 for requests, strictly: a single `chunked` coding, or a single all-digit Content-Length.
    static func framing(
        version: HTTPVersion, fields: HTTP1FieldSectionReader, maxBodyBytes: Int64
    ) -> Result<HTTP1BodyFraming, HTTP1ParseError> {
        let contentLengths = fields.contentLengthValues
        let transferEncodings = fields.transferEncodingValues
        if let transferEncoding = transferEncodings.first {
            if !contentLengths.isEmpty { return .failure(.badRequest("both Content-Length and Transfer-Encoding")) }
            if transferEncodings.count > 1 { return .failure(.badRequest("repeated Transfer-Encoding header")) }
            if fields.transferEncodingHadTrailingWhitespace {
                return .failure(.badRequest("whitespace after Transfer-Encoding value"))
            }
            if version < .http1_1 { return .failure(.badRequest("Transfer-Encoding in an HTTP/1.0 request")) }
            let codings = fields.withValue(at: transferEncoding, HTTP1Grammar.listElements)
            var chunkedCount = 0
            for coding in codings {
                guard HTTP1Grammar.isToken(coding) else { return .failure(.badRequest("invalid Transfer-Encoding")) }
                if HTTP1Grammar.equalsLowercase(coding, "chunked") { chunkedCount += 1 }
            }
            if chunkedCount > 1 { return .failure(.badRequest("chunked applied more than once")) }
            if chunkedCount != codings.count {
                return .failure(HTTP1ParseError(status: 501, reason: "unsupported transfer coding"))
            }
            return .success(.chunked)
        }
        if contentLengths.count > 1 { return .failure(.badRequest("repeated Content-Length header")) }
        if let contentLength = contentLengths.first {
            guard let length = fields.withValue(at: contentLength, HTTP1Grammar.parseDecimal) else {
                return .failure(.badRequest("invalid Content-Length"))
            }
            if length > maxBodyBytes { return .failure(HTTP1ParseError(status: 413, reason: "body too large")) }
            return .success(.contentLength(length))
        }
        return .success(.none)
    }
}
