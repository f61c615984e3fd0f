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

    private(set) var headers = HTTPFields()
    private(set) var hostValues = FramingFieldValues(.host)
    private(set) var contentLengthValues = FramingFieldValues(.contentLength)
    private(set) var transferEncodingValues = FramingFieldValues(.transferEncoding)
    /// Whether any Transfer-Encoding value had whitespace after it (a smuggling gadget).
    private(set) var transferEncodingHadTrailingWhitespace = false
    private var sectionBytes = 0
    private var scanned = 0

    init() {}

    /// Readies the reader for the next message's section. Resets every stored property in place (a fresh reader
    /// assigned over this one cost a release of every field).
    mutating func reset() {
        headers = HTTPFields()
        hostValues = FramingFieldValues(.host)
        contentLengthValues = FramingFieldValues(.contentLength)
        transferEncodingValues = FramingFieldValues(.transferEncoding)
        transferEncodingHadTrailingWhitespace = false
        sectionBytes = 0
        scanned = 0
    }

    /// Consumes complete field lines from `buffer` until the empty line (`.complete`), a malformed line or a limit
    /// (`.error`), or the end of the buffered bytes (`.needMore`). `sizeStatus` is the status for limit errors.
    ///
    /// Every complete line in the buffer is read in one pass over its bytes, in one call into the buffer's storage.
    mutating func read(
        _ buffer: inout HTTP1ByteBuffer, maxBytes: Int, maxFields: Int, sizeStatus: Int
    ) -> Step {
        let (step, consumed) = buffer.withReadableBytes { bytes in
            readLines(bytes, maxBytes: maxBytes, maxFields: maxFields, sizeStatus: sizeStatus)
        }
        buffer.consume(consumed)
        return step
    }

    /// The lines of ``read(_:maxBytes:maxFields:sizeStatus:)`` in `bytes`: its step, and how many bytes it consumed
    /// (the lines it took; a line in error or incomplete is left in the buffer).
    private mutating func readLines(
        _ bytes: UnsafeRawBufferPointer, maxBytes: Int, maxFields: Int, sizeStatus: Int
    ) -> (Step, consumed: Int) {
        var lineStart = 0
        while true {
            let available = maxBytes - sectionBytes
            // The common line in one pass (its end found by the scan that checks its value); any other line, and any
            // line in error or incomplete, by the general path below, which decides exactly as before.
            if scanned == 0, let field = HTTP1Grammar.scanCommonFieldLine(bytes, from: lineStart),
                field.lineLength <= available, headers.count < maxFields
            {
                sectionBytes += field.lineLength
                if headers.isEmpty {
                    let pending = bytes.count - lineStart
                    headers.reserveCapacity(fields: min(max(pending / 24, 8), 64), bytes: min(max(pending, 128), 8192))
                }
                add(
                    field.field,
                    of: UnsafeRawBufferPointer(rebasing: bytes[lineStart..<(lineStart + field.field.valueEnd)]))
                lineStart += field.lineLength
                continue
            }
            // A line arriving in many pieces is scanned once: `scanned` is how far into it the last call looked.
            guard
                let lfOffset = HTTP1Grammar.findLineFeed(
                    UnsafeRawBufferPointer(rebasing: bytes[lineStart...]),
                    scanned: &scanned)
            else {
                return (scanned > available ? .error(tooLarge(sizeStatus)) : .needMore, lineStart)
            }
            let index = lineStart + lfOffset
            let lineLength = lfOffset + 1
            if lineLength > available { return (.error(tooLarge(sizeStatus)), lineStart) }
            // The line must end in CR LF. A CR elsewhere in it is refused by the field-line grammar (neither a token
            // character nor a field-value byte).
            guard index > lineStart, bytes[index - 1] == HTTP1Grammar.cr else {
                return (.error(.badRequest("header line not ended by CRLF, or bare CR")), lineStart)
            }
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<(index - 1)])
            if line.isEmpty { return (.complete, index + 1) }
            switch HTTP1Grammar.parseFieldLineBytes(line) {
            case .failure(let error):
                return (.error(error), lineStart)
            case .success(let field):
                let fieldCount = headers.count
                guard fieldCount < maxFields else {
                    return (.error(HTTP1ParseError(status: sizeStatus, reason: "too many header fields")), lineStart)
                }
                sectionBytes += lineLength
                if fieldCount == 0 {
                    // Room for the fields at once, sized by the bytes at hand (most often the whole section): a
                    // small request's list stays small, a large one is not regrown field by field.
                    let pending = bytes.count - lineStart
                    headers.reserveCapacity(fields: min(max(pending / 24, 8), 64), bytes: min(max(pending, 128), 8192))
                }
                add(field, of: line)
            }
            lineStart = index + 1
        }
    }

    private func tooLarge(_ status: Int) -> HTTP1ParseError {
        HTTP1ParseError(status: status, reason: "header section too large")
    }

    /// Appends the line's field to ``headers`` as bytes; a framing field's position is noted (no string is made).
    @inline(__always)
    private mutating func add(_ field: HTTP1Grammar.FieldLineBytes, of line: UnsafeRawBufferPointer) {
        switch field.token {
        case .host:
            hostValues.append(headers.count)
        case .contentLength:
            contentLengthValues.append(headers.count)
        case .transferEncoding:
            transferEncodingValues.append(headers.count)
            if field.hadTrailingWhitespace { transferEncodingHadTrailingWhitespace = true }
        default:
            break
        }
        headers.appendValidatedLine(
            line, nameCount: field.nameCount, valueStart: field.valueStart, valueEnd: field.valueEnd,
            token: field.token)
    }

    /// Calls `body` with the value bytes of the field at `index` of ``headers`` (a position of ``hostValues`` and the
    /// like); they are valid only inside it.
    func withValue<R>(at index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        headers.withField(at: index) { _, value in body(value) }
    }

    /// The position of the field of `values`' name after the one at `position`, or nil after the last: with
    /// ``FramingFieldValues/first``, the positions of every such field, in order.
    func position(after position: Int, in values: FramingFieldValues) -> Int? {
        guard values.count > 1 else { return nil }
        return headers.firstIndex(token: values.token, from: position + 1)
    }
}

/// Where the fields of one framing field name (Host, Content-Length, Transfer-Encoding) are in the section's
/// ``HTTP1FieldSectionReader/headers``: how many there are and the first one's position (read their values with
/// ``HTTP1FieldSectionReader/withValue(at:_:)``; the later ones, rare, with
/// ``HTTP1FieldSectionReader/position(after:in:)``). A few integers, so a section's reset or copy counts no reference
/// and allocates nothing.
struct FramingFieldValues: Sendable, BitwiseCopyable {
    /// The name the fields have.
    let token: HTTPFieldName
    /// The position of the first field; nil when there is none.
    private(set) var first: Int?
    /// How many fields have the name.
    private(set) var count = 0

    init(_ token: HTTPFieldName) { self.token = token }

    var isEmpty: Bool { count == 0 }

    /// Notes a field of the name at `fieldIndex` (positions come in increasing order).
    mutating func append(_ fieldIndex: Int) {
        if first == nil { first = fieldIndex }
        count += 1
    }
}
