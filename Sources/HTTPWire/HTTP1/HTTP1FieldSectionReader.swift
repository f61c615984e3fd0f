/// Reads a header section (field lines up to the empty line) out of an ``HTTP1ByteBuffer``, one complete line at a
/// time, enforcing the byte and count limits even before a line is complete. Shared by both parsers.
///
/// It collects the fields in order and remembers the framing-relevant ones (Host, Content-Length,
/// Transfer-Encoding) so callers need no second pass.
struct HTTP1FieldSectionReader: Sendable {
    enum Step: Sendable {
        case needMore
        case complete
        case error(HTTP1ParseError)
    }

    private(set) var headers = HTTPHeaders()
    private(set) var hostValues = FramingFieldValues()
    private(set) var contentLengthValues = FramingFieldValues()
    private(set) var transferEncodingValues = FramingFieldValues()
    /// Whether any Transfer-Encoding value had whitespace after it (a smuggling gadget).
    private(set) var transferEncodingHadTrailingWhitespace = false
    private var sectionBytes = 0
    private var scanned = 0
    /// Long names and values seen on this connection, kept across messages (see ``reset()``).
    private var interner = HTTP1FieldInterner()

    init() {}

    /// Readies the reader for the next message's section; the strings it may reuse are kept.
    mutating func reset() {
        let interner = self.interner
        self = HTTP1FieldSectionReader()
        self.interner = interner
    }

    /// Consumes complete field lines from `buffer` until the empty line (`.complete`), a malformed line or a limit
    /// (`.error`), or the end of the buffered bytes (`.needMore`). `sizeStatus` is the status for limit errors.
    mutating func read(
        _ buffer: inout HTTP1ByteBuffer, maxBytes: Int, maxFields: Int, sizeStatus: Int
    ) -> Step {
        while true {
            let available = maxBytes - sectionBytes
            var scanned = self.scanned
            // Moved out rather than copied, so its storage stays uniquely referenced (no copy on write).
            var interner = HTTP1FieldInterner()
            swap(&interner, &self.interner)
            let outcome: (line: Result<HTTP1Grammar.FieldLine, HTTP1ParseError>?, consumed: Int)? =
                buffer.withReadableBytes { bytes in
                    let tooLarge = HTTP1ParseError(status: sizeStatus, reason: "header section too large")
                    guard let lfOffset = HTTP1Grammar.findLineFeed(bytes, scanned: &scanned) else {
                        return bytes.count > available ? (.failure(tooLarge), 0) : nil
                    }
                    if lfOffset + 1 > available { return (.failure(tooLarge), 0) }
                    guard let line = HTTP1Grammar.lineContent(bytes, lfOffset: lfOffset) else {
                        return (.failure(.badRequest("header line not ended by CRLF, or bare CR")), 0)
                    }
                    if line.isEmpty { return (nil, lfOffset + 1) }
                    return (HTTP1Grammar.parseFieldLine(line, interner: &interner), lfOffset + 1)
                }
            self.scanned = scanned
            swap(&interner, &self.interner)
            guard let outcome else { return .needMore }
            switch outcome.line {
            case .failure(let error)?:
                return .error(error)
            case nil:
                buffer.consume(outcome.consumed)
                return .complete
            case .success(let field)?:
                guard headers.count < maxFields else {
                    return .error(HTTP1ParseError(status: sizeStatus, reason: "too many header fields"))
                }
                buffer.consume(outcome.consumed)
                sectionBytes += outcome.consumed
                switch field.kind {
                case .other:
                    break
                case .host:
                    hostValues.append(field.value)
                case .contentLength:
                    contentLengthValues.append(field.value)
                case .transferEncoding:
                    transferEncodingValues.append(field.value)
                    if field.hadTrailingWhitespace { transferEncodingHadTrailingWhitespace = true }
                }
                // Room for a typical section at once, instead of regrowing field by field.
                if headers.isEmpty { headers.reserveCapacity(16) }
                headers.add(name: field.name, value: field.value)
            }
        }
    }
}

/// The values of one framing field (Host, Content-Length, Transfer-Encoding) in the order received. Such a field is
/// almost always sent once, so the first value is held inline: no array is allocated per message.
struct FramingFieldValues: RandomAccessCollection, Sendable {
    private var firstValue: String?
    private var laterValues: [String] = []

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { firstValue == nil ? 0 : 1 + laterValues.count }

    subscript(position: Int) -> String {
        position == 0 ? (firstValue ?? "") : laterValues[position - 1]
    }

    mutating func append(_ value: String) {
        if firstValue == nil { firstValue = value } else { laterValues.append(value) }
    }
}
