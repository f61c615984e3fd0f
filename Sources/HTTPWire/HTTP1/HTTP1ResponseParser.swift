/// A strict, incremental HTTP/1.x response parser for a client connection to an upstream (RFC 9112).
///
/// Call ``expectResponse(to:)`` before sending each request, then feed received bytes with
/// ``append(_:)`` and pull events with ``next()`` until it returns nil. When the upstream
/// closes, call ``connectionClosed()``.
///
/// Anything that could desynchronise the connection is an error: malformed status lines, Content-Length together
/// with Transfer-Encoding, differing Content-Length values, transfer codings other than a single `chunked`,
/// obs-fold, bare LF or CR, NUL and other controls, malformed chunks, too many or too large headers, and
/// `101 Switching Protocols` to a request that did not ask for an upgrade (see ``expectResponse(to:bodyLimited:upgrade:)``).
/// After an error the connection must be
/// discarded. Bytes that arrive beyond the end of a response are never handed to the next response: they set
/// ``hasUnexpectedBytes`` and the connection must not be reused.
package struct HTTP1ResponseParser: Sendable {
    /// Size and count limits for upstream responses.
    package struct Limits: Sendable, Hashable {
        /// The longest status line accepted, excluding its CRLF.
        package var maxStatusLineBytes: Int
        /// The largest header section accepted (field lines with their CRLF and the final empty line); also bounds
        /// trailers.
        package var maxHeaderBytes: Int
        /// The most header fields accepted; also bounds trailers.
        package var maxHeaders: Int
        /// The largest body accepted, or nil for no limit (bodies are streamed, not buffered).
        package var maxBodyBytes: Int64?
        /// The most interim (1xx) responses accepted before the final one.
        package var maxInformationalResponses: Int

        package init(
            maxStatusLineBytes: Int = 8192,
            maxHeaderBytes: Int = 32768,
            maxHeaders: Int = 100,
            maxBodyBytes: Int64? = nil,
            maxInformationalResponses: Int = 16
        ) {
            self.maxStatusLineBytes = maxStatusLineBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxHeaders = maxHeaders
            self.maxBodyBytes = maxBodyBytes
            self.maxInformationalResponses = maxInformationalResponses
        }
    }

    private enum State: Sendable {
        /// No response expected.
        case idle
        case statusLine
        case headers
        case body
        /// The error is in `failure`: a state without a payload is switched on without copying it.
        case failed
    }

    private static let errorStatus = 502

    private var limits: Limits
    /// The body limit given at creation; ``expectResponse(to:bodyLimited:)`` can lift it for one response.
    private let configuredMaxBodyBytes: Int64?
    private var buffer = HTTP1ByteBuffer()
    private var state: State = .idle
    /// The error the parser stopped at (state `.failed`).
    private var failure = HTTP1ParseError(status: HTTP1ResponseParser.errorStatus, reason: "")
    private var requestMethod = HTTPMethod.get
    /// Whether the request being answered asked to switch protocols: a 101 is then its final response.
    private var upgradeRequested = false
    private var scanned = 0
    private var eof = false
    private var informationalCount = 0
    private var status = 0
    private var reason = ""
    private var version = HTTPVersion.http1_1
    private var fields = HTTP1FieldSectionReader()
    private var body = HTTP1BodyDecoder(state: .finished, maxBodyBytes: 0, maxTrailerBytes: 0, maxTrailers: 0)

    /// Whether bytes arrived that belong to no expected response (after a complete response, or while none was
    /// expected). They are discarded; the connection must be closed, not reused.
    package private(set) var hasUnexpectedBytes = false

    /// Whether any byte arrived since the last ``expectResponse(to:)``. A request whose connection closed before
    /// any response byte may be retried on a fresh connection if it is idempotent.
    package private(set) var hasReceivedResponseBytes = false

    /// Creates a parser enforcing `limits`. It expects no response until ``expectResponse(to:)``.
    package init(limits: Limits = .init()) {
        self.limits = limits
        self.configuredMaxBodyBytes = limits.maxBodyBytes
    }

    /// Whether the parser waits for (or is inside) a response.
    package var isAwaitingResponse: Bool {
        switch state {
        case .statusLine, .headers, .body: return true
        case .idle, .failed: return false
        }
    }

    /// Prepares for the response to a request sent with `method` (a response to HEAD has no body whatever its
    /// headers say). With `bodyLimited: false` the body of this response may exceed `maxBodyBytes` (a caller that
    /// streams it rather than collecting it). With `upgrade`, the request asked to switch protocols (`Upgrade`): a
    /// `101 Switching Protocols` is then the final response, framed ``HTTP1ResponseBodyFraming/untilClose`` (with
    /// the body limit, unless lifted), so that every byte after its head, until the server closes, is `.body` (the
    /// new protocol's).
    /// Call it before writing the request. If unexpected bytes arrived, or a response is still in progress, the next
    /// event is an error.
    package mutating func expectResponse(to method: HTTPMethod, bodyLimited: Bool = true, upgrade: Bool = false) {
        limits.maxBodyBytes = bodyLimited ? configuredMaxBodyBytes : nil
        if case .failed = state { return }
        if isAwaitingResponse {
            fail("a new response was expected while one was in progress")
            return
        }
        if hasUnexpectedBytes {
            fail("unexpected bytes after the previous response")
            return
        }
        requestMethod = method
        upgradeRequested = upgrade
        hasReceivedResponseBytes = false
        informationalCount = 0
        // A head is reset as it is returned (and a new parser has none): something is left only when a status line
        // was read or scanned since.
        if status != 0 || scanned != 0 { resetHead() }
        state = .statusLine
    }

    /// Adds received bytes. Bytes that arrive while no response is expected are discarded and set
    /// ``hasUnexpectedBytes``.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        guard acceptsBytes() else { return }
        buffer.append(bytes)
    }

    /// Adds received bytes. Bytes that arrive while no response is expected are discarded and set
    /// ``hasUnexpectedBytes``.
    package mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        guard acceptsBytes() else { return }
        buffer.append(bytes)
    }

    private mutating func acceptsBytes() -> Bool {
        switch state {
        case .idle:
            hasUnexpectedBytes = true
            return false
        case .failed:
            return false
        case .statusLine, .headers, .body:
            hasReceivedResponseBytes = true
            return true
        }
    }

    /// Bytes received and not yet returned in an event.
    package var bufferedByteCount: Int { buffer.readableCount }

    /// The next event, or nil when more bytes are needed (or no response is expected).
    package mutating func next() -> HTTP1ResponseEvent? {
        while true {
            switch state {
            case .idle:
                return nil
            case .failed:
                return .error(failure)
            case .statusLine:
                if let event = parseStatusLine() { return event }
                if case .statusLine = state {
                    return eof
                        ? fail(
                            hasReceivedResponseBytes
                                ? "connection closed inside the status line" : "connection closed before any response")
                        : nil
                }
            case .headers:
                switch fields.read(
                    &buffer, maxBytes: limits.maxHeaderBytes, maxFields: limits.maxHeaders,
                    sizeStatus: Self.errorStatus)
                {
                case .needMore:
                    return eof ? fail("connection closed inside the response head") : nil
                case .error(let error):
                    return fail(error.reason)
                case .complete:
                    if let event = finishHead() { return event }
                }
            case .body:
                switch body.step(&buffer, eof: eof) {
                case .body(let bytes):
                    return .body(bytes)
                case .end:
                    state = .idle
                    if buffer.readableCount > 0 {
                        hasUnexpectedBytes = true
                        buffer.consumeAll()
                    }
                    return .end
                case .needMore:
                    return nil
                case .error(let error):
                    return fail(error.reason)
                }
            }
        }
    }

    /// Reports that the upstream closed the connection and returns the resulting event: `.end` for a body read
    /// until close, `.error` for a response cut short (head, Content-Length or chunked body), nil if no response
    /// was in progress. If body bytes were still buffered this returns them first; keep calling ``next()``.
    package mutating func connectionClosed() -> HTTP1ResponseEvent? {
        eof = true
        return next()
    }

    @discardableResult
    private mutating func fail(_ reason: String) -> HTTP1ResponseEvent {
        let error = HTTP1ParseError(status: Self.errorStatus, reason: reason)
        failure = error
        state = .failed
        buffer.consumeAll()
        fields.reset()
        return .error(error)
    }

    private mutating func resetHead() {
        scanned = 0
        status = 0
        reason = ""
        fields.reset()
    }

    /// Parses the status line if it is complete. Returns an event only on error.
    private mutating func parseStatusLine() -> HTTP1ResponseEvent? {
        let limit = limits.maxStatusLineBytes
        var scanned = self.scanned
        typealias Parsed = (version: HTTPVersion, status: Int, reason: String)
        let outcome: (result: Result<Parsed, HTTP1ParseError>, consumed: Int)? = buffer.withReadableBytes { bytes in
            guard let lfOffset = HTTP1Grammar.findLineFeed(bytes, scanned: &scanned) else {
                return bytes.count > limit &+ 1 ? (.failure(.badRequest("status line too long")), 0) : nil
            }
            if lfOffset > limit &+ 1 { return (.failure(.badRequest("status line too long")), 0) }
            guard lfOffset >= 1, bytes[lfOffset - 1] == HTTP1Grammar.cr else {
                return (.failure(.badRequest("status line not ended by CRLF, or bare CR")), 0)
            }
            // No separate search for a CR inside the line: the status-line grammar checks every byte of it and
            // refuses a CR (not a version, space or digit byte, nor a reason-phrase byte).
            return (Self.parseStatusLine(UnsafeRawBufferPointer(rebasing: bytes[0..<(lfOffset - 1)])), lfOffset + 1)
        }
        self.scanned = scanned
        guard let outcome else { return nil }
        switch outcome.result {
        case .failure(let error):
            return fail(error.reason)
        case .success(let parsed):
            buffer.consume(outcome.consumed)
            version = parsed.version
            status = parsed.status
            reason = parsed.reason
            state = .headers
            return nil
        }
    }

    /// `HTTP/1.x SP 3DIGIT SP reason-phrase`. The status is 100-599; a missing `SP reason` is accepted as empty.
    static func parseStatusLine(
        _ line: UnsafeRawBufferPointer
    ) -> Result<(version: HTTPVersion, status: Int, reason: String), HTTP1ParseError> {
        guard line.count >= 12, line[8] == HTTP1Grammar.sp else {
            return .failure(.badRequest("malformed status line"))
        }
        let versionBytes = UnsafeRawBufferPointer(rebasing: line[0..<8])
        let version: HTTPVersion
        switch HTTP1RequestParser.parseVersion(versionBytes) {
        case .success(let parsed): version = parsed
        case .failure: return .failure(.badRequest("unsupported or malformed HTTP version in status line"))
        }
        var status = 0
        for index in 9..<12 {
            let byte = line[index]
            guard HTTP1Grammar.isDigit(byte) else { return .failure(.badRequest("malformed status code")) }
            status = status * 10 + Int(byte &- 0x30)
        }
        guard (100...599).contains(status) else { return .failure(.badRequest("status code out of range")) }
        var reason = ""
        if line.count > 12 {
            guard line[12] == HTTP1Grammar.sp else { return .failure(.badRequest("malformed status line")) }
            let reasonBytes = UnsafeRawBufferPointer(rebasing: line[13...])
            for byte in reasonBytes where !HTTP1Grammar.isFieldValueByte(byte) {
                return .failure(.badRequest("invalid character in reason phrase"))
            }
            // The standard phrase (most often) is compared with static bytes and taken as the literal it is, not
            // decoded.
            reason =
                HTTP1Grammar.equals(reasonBytes, HTTPStatus.reasonPhraseBytes(for: status))
                ? HTTPStatus.reasonPhrase(for: status) : HTTP1Grammar.string(reasonBytes)
        }
        return .success((version, status, reason))
    }

    /// Validates the framing of the complete head and emits it (or an interim response).
    private mutating func finishHead() -> HTTP1ResponseEvent? {
        let head = HTTPResponseHead(status: status, reason: reason, version: version, headers: fields.headers)
        if status == 101 && upgradeRequested {
            body = HTTP1BodyDecoder(
                state: .untilClose, maxBodyBytes: limits.maxBodyBytes ?? .max, maxTrailerBytes: 0, maxTrailers: 0,
                errorStatus: Self.errorStatus)
            resetHead()
            state = .body
            return .head(head, .untilClose)
        }
        if (100..<200).contains(status) {
            if status == 101 { return fail("101 Switching Protocols without an upgrade request") }
            informationalCount += 1
            if informationalCount > limits.maxInformationalResponses { return fail("too many interim responses") }
            resetHead()
            state = .statusLine
            return .informational(head)
        }
        let framing: HTTP1ResponseBodyFraming
        switch Self.framing(
            status: status, requestMethod: requestMethod, version: version, fields: fields,
            maxBodyBytes: limits.maxBodyBytes)
        {
        case .success(let value): framing = value
        case .failure(let error): return fail(error.reason)
        }
        let maxBody = limits.maxBodyBytes ?? Int64.max
        let decoderState: HTTP1BodyDecoder.State
        switch framing {
        case .none: decoderState = .finished
        case .contentLength(let length): decoderState = .contentLength(remaining: length)
        case .chunked: decoderState = .chunkSizeLine
        case .untilClose: decoderState = .untilClose
        }
        body = HTTP1BodyDecoder(
            state: decoderState, maxBodyBytes: maxBody, maxTrailerBytes: limits.maxHeaderBytes,
            maxTrailers: limits.maxHeaders, errorStatus: Self.errorStatus)
        resetHead()
        state = .body
        return .head(head, framing)
    }

    /// Whether `method` is HEAD. GET, the usual method, is ruled out first: equal strings compare by their bits, at
    /// once, where different ones go through the string comparison.
    private static func isHead(_ method: HTTPMethod) -> Bool {
        method != .get && method == .head
    }

    /// RFC 9112 §6.3 for responses, strictly.
    static func framing(
        status: Int, requestMethod: HTTPMethod, version: HTTPVersion, fields: borrowing HTTP1FieldSectionReader,
        maxBodyBytes: Int64?
    ) -> Result<HTTP1ResponseBodyFraming, HTTP1ParseError> {
        let hasTransferEncoding = !fields.transferEncodingValues.isEmpty
        if hasTransferEncoding && !fields.contentLengthValues.isEmpty {
            return .failure(.badRequest("both Content-Length and Transfer-Encoding"))
        }
        var contentLength: Int64?
        var nextContentLength = fields.contentLengthValues.first
        while let field = nextContentLength {
            nextContentLength = fields.position(after: field, in: fields.contentLengthValues)
            // The usual single number needs no list splitting.
            if let length = fields.withValue(at: field, HTTP1Grammar.parseDecimal) {
                if let previous = contentLength, previous != length {
                    return .failure(.badRequest("differing Content-Length values"))
                }
                contentLength = length
                continue
            }
            for element in fields.withValue(at: field, HTTP1Grammar.listElements) {
                guard let length = HTTP1Grammar.parseDecimal(element) else {
                    return .failure(.badRequest("invalid Content-Length"))
                }
                if let previous = contentLength, previous != length {
                    return .failure(.badRequest("differing Content-Length values"))
                }
                contentLength = length
            }
        }
        if hasTransferEncoding {
            if version < .http1_1 { return .failure(.badRequest("Transfer-Encoding in an HTTP/1.0 response")) }
            var codings: [ArraySlice<UInt8>] = []
            var nextTransferEncoding = fields.transferEncodingValues.first
            while let field = nextTransferEncoding {
                codings += fields.withValue(at: field, HTTP1Grammar.listElements)
                nextTransferEncoding = fields.position(after: field, in: fields.transferEncodingValues)
            }
            guard codings.count == 1, HTTP1Grammar.equalsLowercase(codings[0], "chunked") else {
                return .failure(.badRequest("unsupported Transfer-Encoding"))
            }
        }
        if status == 204 || status == 304 || isHead(requestMethod) { return .success(.none) }
        if hasTransferEncoding { return .success(.chunked) }
        if let contentLength {
            if let maxBodyBytes, contentLength > maxBodyBytes {
                return .failure(.badRequest("response body too large"))
            }
            return .success(.contentLength(contentLength))
        }
        return .success(.untilClose)
    }
}
