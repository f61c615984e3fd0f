import HTTPWire

/// `http1-request`: a client's byte stream through `HTTP1RequestParser` (pipelined requests, bodies, errors).
///
/// Checked: the stream parsed whole and in pieces gives the same requests, bodies and error; every accepted head is
/// well-formed (token method, visible-ASCII target, one Host in HTTP/1.1, clean field values, never Content-Length with
/// Transfer-Encoding) and within the limits, and re-serialised by `HTTP1Serializer` it parses back to the same head
/// and framing; a body is never longer than its Content-Length or the limit, nor the bodies longer than the input.
enum HTTP1RequestTarget {
    static let target = FuzzTarget(
        name: "http1-request",
        summary: "HTTP/1.1 request parser: whole vs split, head round trip through the serializer, limits",
        maxLength: 16384, dictionary: "http.dict", run: run)

    /// Limits that any head the parser accepted fits in once written out again.
    static let roundTripLimits = HTTP1ParserLimits(
        maxRequestLineBytes: 1 << 20, maxHeaderBytes: 1 << 20,
        maxHeaders: 1 << 20, maxBodyBytes: .max)

    /// Small limits, so that every limit is within reach of short inputs.
    static let tightLimits = HTTP1ParserLimits(
        maxRequestLineBytes: 64, maxHeaderBytes: 256, maxHeaders: 6,
        maxBodyBytes: 64)

    struct Request: Equatable {
        var head: HTTPRequestHead
        var framing: HTTP1BodyFraming
        var body: [UInt8] = []
        var ended = false
    }

    struct Outcome: Equatable {
        var requests: [Request] = []
        var error: HTTP1ParseError?
        /// Bytes left in the parser when no error occurred.
        var buffered = 0
    }

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let limits = HTTP1ParserLimits()
        let whole = try parse(bytes, pieces: [0..<bytes.count], limits: limits)
        let split = try parse(bytes, pieces: FuzzBytes.pieces(of: bytes), limits: limits)
        try check(whole == split, "parsed whole and in pieces differ:\n\(whole)\n\(split)")
        try checkRequests(whole, input: bytes, limits: limits)
        let tight = try parse(bytes, pieces: [0..<bytes.count], limits: tightLimits)
        try checkRequests(tight, input: bytes, limits: tightLimits)
    }

    /// Feeds `pieces` of `bytes` one after another, reading every event after each.
    static func parse(
        _ bytes: UnsafeRawBufferPointer, pieces: [Range<Int>],
        limits: HTTP1ParserLimits
    ) throws(FuzzFailure) -> Outcome {
        var parser = HTTP1RequestParser(limits: limits)
        var outcome = Outcome()
        var appended = 0
        feeding: for piece in pieces {
            parser.append(UnsafeRawBufferPointer(rebasing: bytes[piece]))
            appended += piece.count
            while let event = parser.next() {
                switch event {
                case .head(let head, let framing):
                    try check(outcome.requests.last?.ended ?? true, "a head before the previous request ended")
                    outcome.requests.append(Request(head: head, framing: framing))
                case .body(let chunk):
                    try check(!chunk.isEmpty, "an empty body event")
                    guard let last = outcome.requests.indices.last, !outcome.requests[last].ended else {
                        throw failure("body bytes outside a request")
                    }
                    outcome.requests[last].body += chunk
                case .end:
                    guard let last = outcome.requests.indices.last, !outcome.requests[last].ended else {
                        throw failure("an end outside a request")
                    }
                    outcome.requests[last].ended = true
                case .error(let error):
                    outcome.error = error
                    try check(parser.next() == .error(error), "the error is not repeated")
                    try check(parser.bufferedByteCount == 0, "bytes kept after an error")
                    try check(
                        [400, 413, 414, 431, 501, 505].contains(error.status), "unexpected status \(error.status)")
                    break feeding
                }
            }
            try check(parser.bufferedByteCount <= appended, "more bytes buffered than received")
        }
        if outcome.error == nil {
            outcome.buffered = parser.bufferedByteCount
            // A connection closed while no request is under way must lose nothing: every request ended and only
            // empty lines wait.
            if !parser.isMidRequest {
                let waiting = bytes[(bytes.count - parser.bufferedByteCount)...]
                try check(
                    outcome.requests.allSatisfy(\.ended) && waiting.allSatisfy { $0 == 0x0D || $0 == 0x0A },
                    "not mid-request although a request is unfinished")
            }
        }
        return outcome
    }

    static func checkRequests(
        _ outcome: Outcome, input: UnsafeRawBufferPointer,
        limits: HTTP1ParserLimits
    ) throws(FuzzFailure) {
        var bodyBytes = 0
        for (index, request) in outcome.requests.enumerated() {
            let isLast = index == outcome.requests.count - 1
            try check(request.ended || isLast, "a request before the last one did not end")
            try checkHead(request.head, framing: request.framing, limits: limits)
            bodyBytes += request.body.count
            try check(Int64(request.body.count) <= limits.maxBodyBytes, "body beyond max_body_bytes")
            switch request.framing {
            case .none:
                try check(request.body.isEmpty, "body bytes without framing")
            case .contentLength(let length):
                try check(length >= 0, "negative Content-Length")
                try check(
                    request.ended ? Int64(request.body.count) == length : Int64(request.body.count) < length,
                    "body of \(request.body.count) bytes for Content-Length \(length) (ended: \(request.ended))")
            case .chunked:
                break
            }
            try checkRoundTrip(request)
        }
        try check(bodyBytes <= input.count, "more body bytes than input bytes")
    }

    static func checkHead(
        _ head: HTTPRequestHead, framing: HTTP1BodyFraming,
        limits: HTTP1ParserLimits
    ) throws(FuzzFailure) {
        try check(FuzzBytes.isToken(head.method.rawValue), "method is not a token: \(head.method)")
        try check(
            !head.target.utf8.isEmpty && head.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x23 },
            "target with invalid bytes: \(head.target)")
        try check(head.target.utf8.count <= limits.maxRequestLineBytes, "target longer than the request line limit")
        try check(head.version == .http1_0 || head.version == .http1_1, "version \(head.version)")
        try check(head.headers.count <= limits.maxHeaders, "more fields than max_headers")
        var sectionBytes = 2
        for field in head.headers {
            try check(FuzzBytes.isToken(field.name), "field name is not a token: \(field.name)")
            try check(
                FuzzBytes.isCleanFieldValue(field.value), "field value not clean: \(field.value.debugDescription)")
            sectionBytes += FuzzBytes.wireCount(field.name) + FuzzBytes.wireCount(field.value) + 3
        }
        try check(sectionBytes <= limits.maxHeaderBytes, "field section larger than max_header_bytes")
        let hosts = head.headers["Host"]
        try check(hosts.count <= 1, "more than one Host")
        try check(head.version == .http1_0 || hosts.count == 1, "HTTP/1.1 request without Host")
        let lengths = head.headers["Content-Length"]
        let codings = head.headers["Transfer-Encoding"]
        try check(lengths.isEmpty || codings.isEmpty, "both Content-Length and Transfer-Encoding")
        try check(lengths.count <= 1 && codings.count <= 1, "repeated framing field")
        switch framing {
        case .none: try check(lengths.isEmpty && codings.isEmpty, "framing fields without framing")
        case .contentLength(let length):
            try check(
                lengths.count == 1 && FuzzBytes.decimalValue(lengths[0]) == length,
                "Content-Length \(lengths) read as \(length)")
        case .chunked: try check(codings.count == 1 && head.version == .http1_1, "chunked without Transfer-Encoding")
        }
        if head.method == .connect {
            try check(!FuzzBytes.hasPrefix(head.target, "/"), "CONNECT with an origin-form target")
        }
    }

    /// The head written by the serializer parses back to itself, with the same framing.
    static func checkRoundTrip(_ request: Request) throws(FuzzFailure) {
        var wire: [UInt8] = []
        do {
            try HTTP1Serializer.writeRequestHead(request.head, into: &wire)
        } catch {
            throw failure("an accepted head cannot be serialised: \(error.reason)")
        }
        // Limits wide enough for the head as written: a byte that is not UTF-8 was read as U+FFFD and is written as
        // three bytes, so a head within the limits can be written three times as long.
        var parser = HTTP1RequestParser(limits: roundTripLimits)
        parser.append(wire)
        guard case .head(let head, let framing)? = parser.next() else {
            throw failure("a serialised head does not parse: \(String(decoding: wire, as: UTF8.self).debugDescription)")
        }
        try check(head == request.head, "head changed in the round trip: \(request.head) -> \(head)")
        try check(framing == request.framing, "framing changed in the round trip")
        try check(parser.bufferedByteCount == 0, "bytes left after a serialised head")
    }
}
