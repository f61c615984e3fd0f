import HTTPWire

/// `http1-response`: an upstream's bytes through `HTTP1ResponseParser`, then the upstream's close.
///
/// The first input byte chooses the exchange: bit 0 a HEAD request, bit 1 a request that asked to switch protocols,
/// bit 2 small limits (64-byte body, 2 interim responses), bit 3 a body limit lifted for this response
/// (`bodyLimited: false`). The rest is what the upstream sends.
///
/// Checked: whole and in pieces give the same events; interim responses are 1xx other than 101 and within their
/// limit; a final 101 only answers an upgrade request and is read until close; HEAD, 204 and 304 have no body; a
/// Content-Length body is exactly that long when it ends and shorter when cut; a limited body stays within the limit;
/// field names are tokens and values clean; a final head re-serialised by `HTTP1Serializer` parses back to itself
/// with the same framing.
enum HTTP1ResponseTarget {
    static let target = FuzzTarget(
        name: "http1-response",
        summary: "HTTP/1.1 response parser: whole vs split, framing rules, head round trip, limits",
        maxLength: 16384, dictionary: "http.dict", run: run)

    struct Exchange: Equatable {
        var head: Bool
        var upgrade: Bool
        var limits: HTTP1ResponseParser.Limits
        var bodyLimited: Bool

        init(flags: UInt8) {
            head = flags & 1 != 0
            upgrade = flags & 2 != 0
            limits =
                flags & 4 != 0
                ? HTTP1ResponseParser.Limits(
                    maxStatusLineBytes: 64, maxHeaderBytes: 256, maxHeaders: 6,
                    maxBodyBytes: 64, maxInformationalResponses: 2)
                : HTTP1ResponseParser.Limits(maxBodyBytes: 1 << 20)
            bodyLimited = flags & 8 == 0
        }

        var method: HTTPMethod { head ? .head : .get }
        var bodyLimit: Int64? { bodyLimited ? limits.maxBodyBytes : nil }
    }

    struct Outcome: Equatable {
        var informational: [HTTPResponseHead] = []
        var head: HTTPResponseHead?
        var framing: HTTP1ResponseBodyFraming?
        var body: [UInt8] = []
        var ended = false
        var error: HTTP1ParseError?
        var unexpectedBytes = false
    }

    static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
        guard let flags = input.first else { return }
        let exchange = Exchange(flags: flags)
        let bytes = UnsafeRawBufferPointer(rebasing: input[1...])
        let whole = try parse(bytes, pieces: [0..<bytes.count], exchange: exchange)
        let split = try parse(bytes, pieces: FuzzBytes.pieces(of: bytes), exchange: exchange)
        if whole.error != nil && whole.error == split.error {
            // A body read until close is handed out as it arrives and refused once past the limit: in pieces, more of
            // it may have gone out before the piece that crossed the limit. Both are beginnings of the same body.
            var comparable = split
            comparable.body = whole.body
            try check(whole == comparable, "parsed whole and in pieces differ:\n\(whole)\n\(split)")
            let shorter = min(whole.body.count, split.body.count)
            try check(whole.body.prefix(shorter) == split.body.prefix(shorter), "bodies differ before the error")
        } else {
            try check(whole == split, "parsed whole and in pieces differ:\n\(whole)\n\(split)")
        }
        try checkOutcome(whole, input: bytes, exchange: exchange)
    }

    static func parse(
        _ bytes: UnsafeRawBufferPointer, pieces: [Range<Int>],
        exchange: Exchange
    ) throws(FuzzFailure) -> Outcome {
        var parser = HTTP1ResponseParser(limits: exchange.limits)
        parser.expectResponse(to: exchange.method, bodyLimited: exchange.bodyLimited, upgrade: exchange.upgrade)
        var outcome = Outcome()
        func handle(_ event: HTTP1ResponseEvent) throws(FuzzFailure) -> Bool {
            switch event {
            case .informational(let head):
                try check(outcome.head == nil, "an interim response after the final head")
                outcome.informational.append(head)
            case .head(let head, let framing):
                try check(outcome.head == nil, "a second final head")
                outcome.head = head
                outcome.framing = framing
            case .body(let chunk):
                try check(!chunk.isEmpty, "an empty body event")
                try check(outcome.head != nil && !outcome.ended, "body bytes outside a response")
                outcome.body += chunk
            case .end:
                try check(outcome.head != nil && !outcome.ended, "an end outside a response")
                outcome.ended = true
            case .error(let error):
                outcome.error = error
                try check(error.status == 502, "a response error with status \(error.status)")
                try check(parser.next() == .error(error), "the error is not repeated")
                return false
            }
            return true
        }
        feeding: for piece in pieces {
            parser.append(UnsafeRawBufferPointer(rebasing: bytes[piece]))
            while let event = parser.next() {
                if try !handle(event) { break feeding }
            }
        }
        if outcome.error == nil, let event = parser.connectionClosed() {
            if try handle(event) {
                while let event = parser.next() {
                    if try !handle(event) { break }
                }
            }
        }
        try check(!parser.isAwaitingResponse || outcome.error != nil, "still awaiting a response after the close")
        outcome.unexpectedBytes = parser.hasUnexpectedBytes
        return outcome
    }

    static func checkOutcome(
        _ outcome: Outcome, input: UnsafeRawBufferPointer,
        exchange: Exchange
    ) throws(FuzzFailure) {
        try check(
            outcome.informational.count <= exchange.limits.maxInformationalResponses, "too many interim responses")
        for head in outcome.informational {
            try check((100..<200).contains(head.status) && head.status != 101, "interim status \(head.status)")
            try checkHead(head, limits: exchange.limits)
        }
        try check(outcome.body.count <= input.count, "more body bytes than input bytes")
        guard let head = outcome.head, let framing = outcome.framing else {
            try check(outcome.error != nil, "neither a response nor an error")
            try check(outcome.body.isEmpty && !outcome.ended, "a body without a head")
            return
        }
        try checkHead(head, limits: exchange.limits)
        try check(outcome.ended || outcome.error != nil, "a response neither ended nor failed after the close")
        if head.status == 101 {
            try check(exchange.upgrade && framing == .untilClose, "101 without an upgrade request, or not until close")
        } else {
            try check((200...599).contains(head.status), "final status \(head.status)")
        }
        let lengths = head.headers["Content-Length"]
        let codings = head.headers["Transfer-Encoding"]
        try check(head.status == 101 || lengths.isEmpty || codings.isEmpty, "both Content-Length and Transfer-Encoding")
        if (exchange.head && head.status != 101) || head.status == 204 || head.status == 304 {
            try check(framing == .none && outcome.body.isEmpty, "a body for HEAD, 204 or 304")
        }
        switch framing {
        case .none:
            try check(outcome.body.isEmpty, "body bytes without framing")
        case .contentLength(let length):
            try check(lengths.count >= 1, "Content-Length framing without the field")
            try check(
                outcome.ended ? Int64(outcome.body.count) == length : Int64(outcome.body.count) < length,
                "body of \(outcome.body.count) bytes for Content-Length \(length)")
            if let limit = exchange.bodyLimit { try check(length <= limit, "Content-Length beyond the limit") }
        case .chunked:
            try check(codings.count >= 1 && head.version == .http1_1, "chunked without Transfer-Encoding in HTTP/1.1")
        case .untilClose:
            // A 101's framing fields mean nothing: what follows its head is the new protocol's.
            try check(
                head.status == 101 || (lengths.isEmpty && codings.isEmpty), "read until close despite framing fields")
        }
        if let limit = exchange.bodyLimit {
            try check(Int64(outcome.body.count) <= limit, "body beyond the limit")
        }
        try checkRoundTrip(head, framing: framing, exchange: exchange)
    }

    static func checkHead(_ head: HTTPResponseHead, limits: HTTP1ResponseParser.Limits) throws(FuzzFailure) {
        try check(head.version == .http1_0 || head.version == .http1_1, "version \(head.version)")
        try check(head.reason.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "reason with controls")
        try check(head.headers.count <= limits.maxHeaders, "more fields than max_headers")
        var sectionBytes = 2
        for field in head.headers {
            try check(FuzzBytes.isToken(field.name), "field name is not a token: \(field.name)")
            try check(
                FuzzBytes.isCleanFieldValue(field.value), "field value not clean: \(field.value.debugDescription)")
            sectionBytes += FuzzBytes.wireCount(field.name) + FuzzBytes.wireCount(field.value) + 3
        }
        try check(sectionBytes <= limits.maxHeaderBytes, "field section larger than max_header_bytes")
    }

    static func checkRoundTrip(
        _ head: HTTPResponseHead, framing: HTTP1ResponseBodyFraming,
        exchange: Exchange
    ) throws(FuzzFailure) {
        var wire: [UInt8] = []
        do {
            try HTTP1Serializer.writeResponseHead(head, into: &wire)
        } catch {
            throw failure("an accepted head cannot be serialised: \(error.reason)")
        }
        // Wide limits: a byte that is not UTF-8 was read as U+FFFD and is written as three bytes, so a head within
        // the limits can be written three times as long.
        var parser = HTTP1ResponseParser(
            limits: .init(
                maxStatusLineBytes: 1 << 20, maxHeaderBytes: 1 << 20,
                maxHeaders: 1 << 20, maxBodyBytes: exchange.limits.maxBodyBytes))
        parser.expectResponse(to: exchange.method, bodyLimited: exchange.bodyLimited, upgrade: exchange.upgrade)
        parser.append(wire)
        guard case .head(let again, let againFraming)? = parser.next() else {
            throw failure("a serialised head does not parse: \(String(decoding: wire, as: UTF8.self).debugDescription)")
        }
        try check(again == head, "head changed in the round trip: \(head) -> \(again)")
        try check(againFraming == framing, "framing changed in the round trip")
    }
}
