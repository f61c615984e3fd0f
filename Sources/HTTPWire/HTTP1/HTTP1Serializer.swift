/// Writes HTTP/1.1 message heads and chunked body framing into byte buffers.
///
/// Every part is validated while it is copied: methods and field names must be tokens, targets visible ASCII, and
/// reason phrases and field values may not contain CR, LF, NUL or other controls except HTAB, so a serialized head
/// can never carry an injected line. On error the buffer may hold a partial head and must be discarded.
package enum HTTP1Serializer {
    /// Appends `method SP target SP version CRLF`, the header lines and the final CRLF.
    package static func writeRequestHead(
        _ head: HTTPRequestHead, into buffer: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        try writeRequestLine(method: head.method, target: head.target, version: head.version, into: &buffer)
        try writeHeaders(head.headers, into: &buffer)
    }

    /// Appends `method SP target SP version CRLF` only. Follow it with ``writeField(name:value:into:)`` per field and
    /// ``writeEndOfHead(into:)``.
    package static func writeRequestLine(
        method: HTTPMethod, target: String, version: HTTPVersion, into buffer: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        // Native strings have their UTF-8 contiguous: read in place, without copying (and retaining) the strings.
        let inPlace = method.rawValue.utf8.withContiguousStorageIfAvailable { method in
            target.utf8.withContiguousStorageIfAvailable { target in
                checkAndAppendRequestLine(method: method, target: target, version: version, to: &buffer)
            }
        }
        if case .some(.some(let failure)) = inPlace {
            if let failure { throw failure }
            return
        }
        var method = method.rawValue
        var target = target
        // `withUTF8` makes a string contiguous first if it is not (bridged).
        let failure: HTTP1SerializationError? = method.withUTF8 { method in
            target.withUTF8 { target in
                checkAndAppendRequestLine(method: method, target: target, version: version, to: &buffer)
            }
        }
        if let failure { throw failure }
    }

    /// Checks the request line's parts and appends it; the error, and nothing appended, for a part that is not valid.
    private static func checkAndAppendRequestLine(
        method: UnsafeBufferPointer<UInt8>, target: UnsafeBufferPointer<UInt8>, version: HTTPVersion,
        to buffer: inout [UInt8]
    ) -> HTTP1SerializationError? {
        if let failure = requestLineFailure(method: method, target: target, version: version) { return failure }
        appendRequestLine(method: method, target: target, version: version, to: &buffer)
        return nil
    }

    /// The error for a request line part that is not valid (a method that is not a token, an empty target or one with
    /// a byte outside visible ASCII, a version digit above 9); nil when every part is valid.
    static func requestLineFailure(
        method: UnsafeBufferPointer<UInt8>, target: UnsafeBufferPointer<UInt8>, version: HTTPVersion
    ) -> HTTP1SerializationError? {
        guard HTTP1Grammar.isToken(method) else {
            return HTTP1SerializationError(reason: "method is not a token")
        }
        guard !target.isEmpty, !target.contains(where: { $0 < 0x21 || $0 > 0x7E }) else {
            return HTTP1SerializationError(reason: "request target contains invalid characters")
        }
        guard (0...9).contains(version.major), (0...9).contains(version.minor) else {
            return HTTP1SerializationError(reason: "HTTP version is not single-digit")
        }
        return nil
    }

    /// Appends `method SP target SP HTTP/x.y CRLF` from contiguous, checked bytes, assembled on the stack and appended
    /// at once (the caller has checked the version's digits are single).
    private static func appendRequestLine(
        method: UnsafeBufferPointer<UInt8>, target: UnsafeBufferPointer<UInt8>, version: HTTPVersion,
        to buffer: inout [UInt8]
    ) {
        let length = method.count + target.count + 12  // two spaces, "HTTP/x.y", CRLF
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { line in
            guard let start = line.baseAddress else { return }
            let written = writeRequestLine(method: method, target: target, version: version, to: start)
            buffer.append(contentsOf: UnsafeBufferPointer(start: start, count: written))
        }
    }

    /// Writes `method SP target SP HTTP/x.y CRLF` of checked parts at `start` (which has room for both and 12 more
    /// bytes); returns the number of bytes written.
    @inline(__always)
    static func writeRequestLine(
        method: UnsafeBufferPointer<UInt8>, target: UnsafeBufferPointer<UInt8>, version: HTTPVersion,
        to start: UnsafeMutablePointer<UInt8>
    ) -> Int {
        let length = method.count + target.count + 12
        if let methodBase = method.baseAddress { start.update(from: methodBase, count: method.count) }
        var index = method.count
        start[index] = HTTP1Grammar.sp
        if let targetBase = target.baseAddress { (start + index + 1).update(from: targetBase, count: target.count) }
        index += 1 + target.count
        start[index] = HTTP1Grammar.sp
        let versionText: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (
            0x48, 0x54, 0x54, 0x50, 0x2F, 0x30 &+ UInt8(version.major), 0x2E, 0x30 &+ UInt8(version.minor)
        )
        withUnsafeBytes(of: versionText) {
            (start + index + 1).update(from: $0.bindMemory(to: UInt8.self).baseAddress.unsafelyUnwrapped, count: 8)
        }
        start[length - 2] = HTTP1Grammar.cr
        start[length - 1] = HTTP1Grammar.lf
        return length
    }

    /// Appends the status line, the header lines and the final CRLF.
    package static func writeResponseHead(
        _ head: HTTPResponseHead, into buffer: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        try writeStatusLine(head, into: &buffer)
        try writeHeaders(head.headers, into: &buffer)
    }

    /// Appends only the status line of `head` (`HTTP/1.1 200 OK CRLF`); its headers are not written. Follow it with
    /// ``writeField(name:value:into:)`` per field and ``writeEndOfHead(into:)``.
    package static func writeStatusLine(
        _ head: HTTPResponseHead, into buffer: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        if head.version == .http1_1, let line = commonStatusLine(head.status, reason: head.reason) {
            line.withUTF8Buffer { buffer.append(contentsOf: $0) }
        } else {
            guard (100...999).contains(head.status) else {
                throw HTTP1SerializationError(reason: "status code is not three digits")
            }
            let reason = head.reason.utf8
            guard !reason.contains(where: { !HTTP1Grammar.isFieldValueByte($0) }) else {
                throw HTTP1SerializationError(reason: "reason phrase contains control characters")
            }
            try writeVersion(head.version, into: &buffer)
            buffer.append(HTTP1Grammar.sp)
            buffer.append(0x30 &+ UInt8(head.status / 100))
            buffer.append(0x30 &+ UInt8(head.status / 10 % 10))
            buffer.append(0x30 &+ UInt8(head.status % 10))
            buffer.append(HTTP1Grammar.sp)
            buffer.append(contentsOf: reason)
            buffer.append(HTTP1Grammar.cr)
            buffer.append(HTTP1Grammar.lf)
        }
    }

    /// Appends one header line, `name: value CRLF`, validating both.
    package static func writeField(name: String, value: String, into buffer: inout [UInt8])
        throws(HTTP1SerializationError)
    {
        let written = name.utf8.withContiguousStorageIfAvailable { name in
            value.utf8.withContiguousStorageIfAvailable { value in
                writeValidField(name: name, value: value, into: &buffer)
            }
        }
        if case true?? = written { return }
        try writeFieldSlowly(name: name, value: value, into: &buffer)
    }

    /// Appends `name: value CRLF` from contiguous bytes when both are valid; false (nothing appended) otherwise.
    private static func writeValidField(
        name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]
    ) -> Bool {
        guard HTTP1Grammar.isToken(name) else { return false }
        if let base = value.baseAddress, !HTTP1Grammar.areFieldValueBytes(UnsafeRawPointer(base), count: value.count) {
            return false
        }
        buffer.reserveCapacity(buffer.count + name.count + value.count + 4)
        appendFieldLine(name: name, value: value, to: &buffer)
        return true
    }

    /// Appends `name: value CRLF`, as they are (the callers have checked them), for contiguous bytes: the line is
    /// assembled on the stack and appended to `buffer` at once (one append instead of six, each of which checks the
    /// array's room).
    @inline(__always)
    private static func appendFieldLine(
        name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, to buffer: inout [UInt8]
    ) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: name.count + value.count + 4) { line in
            guard let start = line.baseAddress else { return }
            let length = writeFieldLine(name: name, value: value, to: start)
            buffer.append(contentsOf: UnsafeBufferPointer(start: start, count: length))
        }
    }

    /// Appends `name: value CRLF`, as they are (the callers have checked them).
    @inline(__always)
    private static func appendFieldLine(
        name: some Collection<UInt8>, value: some Collection<UInt8>,
        to buffer: inout [UInt8]
    ) {
        buffer.append(contentsOf: name)
        buffer.append(HTTP1Grammar.colon)
        buffer.append(HTTP1Grammar.sp)
        buffer.append(contentsOf: value)
        buffer.append(HTTP1Grammar.cr)
        buffer.append(HTTP1Grammar.lf)
    }

    /// ``writeField(name:value:into:)`` for strings without contiguous UTF-8 (bridged), and to name the error.
    private static func writeFieldSlowly(name: String, value: String, into buffer: inout [UInt8])
        throws(HTTP1SerializationError)
    {
        let name = name.utf8
        guard HTTP1Grammar.isToken(name) else {
            throw HTTP1SerializationError(reason: "header name is not a token")
        }
        let value = value.utf8
        guard !value.contains(where: { !HTTP1Grammar.isFieldValueByte($0) }) else {
            throw HTTP1SerializationError(reason: "header value contains CR, LF, NUL or another control character")
        }
        appendFieldLine(name: name, value: value, to: &buffer)
    }

    /// Appends `Content-Length: <length> CRLF`; a negative length is written as 0.
    package static func writeContentLength(_ length: Int, into buffer: inout [UInt8]) {
        // The line is assembled on the stack ("Content-Length: ", at most 19 digits, CRLF) and appended at once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { line in
            guard let start = line.baseAddress else { return }
            let length = writeContentLengthLine(length, to: start)
            buffer.append(contentsOf: UnsafeBufferPointer(start: start, count: length))
        }
    }

    /// Writes `Content-Length: <length> CRLF` at `target` (which has room for 40 bytes); returns the number of bytes
    /// written. A negative length is written as 0.
    @inline(__always)
    static func writeContentLengthLine(_ length: Int, to start: UnsafeMutablePointer<UInt8>) -> Int {
        let name: StaticString = "Content-Length: "
        let nameLength = name.utf8CodeUnitCount
        name.withUTF8Buffer { start.update(from: $0.baseAddress.unsafelyUnwrapped, count: nameLength) }
        let digits = writeDecimal(length, to: start + nameLength)
        start[nameLength + digits] = HTTP1Grammar.cr
        start[nameLength + digits + 1] = HTTP1Grammar.lf
        return nameLength + digits + 2
    }

    /// Writes `value` in decimal at `start` (room for 20 digits; a negative value is written as 0); returns the
    /// number of digits. A `Content-Length` value, over HTTP/1 and HTTP/2.
    @inline(__always)
    static func writeDecimal(_ value: Int, to start: UnsafeMutablePointer<UInt8>) -> Int {
        var value = UInt(max(0, value))
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        var index = digits
        repeat {
            index -= 1
            start[index] = 0x30 &+ UInt8(truncatingIfNeeded: value % 10)
            value /= 10
        } while value > 0
        return digits
    }

    /// Appends the empty line that ends a head.
    package static func writeEndOfHead(into buffer: inout [UInt8]) {
        buffer.append(HTTP1Grammar.cr)
        buffer.append(HTTP1Grammar.lf)
    }

    /// Appends one chunk: its size in hex, CRLF, the bytes and CRLF. Writes nothing for empty input (an empty
    /// chunk would end the body).
    package static func writeChunk(_ bytes: UnsafeRawBufferPointer, into buffer: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        writeChunkSize(bytes.count, into: &buffer)
        buffer.append(contentsOf: bytes)
        buffer.append(HTTP1Grammar.cr)
        buffer.append(HTTP1Grammar.lf)
    }

    /// Appends one chunk holding `bytes`; nothing for an empty array.
    package static func writeChunk(_ bytes: [UInt8], into buffer: inout [UInt8]) {
        bytes.withUnsafeBytes { writeChunk($0, into: &buffer) }
    }

    /// Appends the last chunk and an empty trailer section: `0 CRLF CRLF`.
    package static func writeLastChunk(into buffer: inout [UInt8]) {
        buffer.append(contentsOf: [0x30, HTTP1Grammar.cr, HTTP1Grammar.lf, HTTP1Grammar.cr, HTTP1Grammar.lf])
    }

    // MARK: Parts

    private static func writeVersion(_ version: HTTPVersion, into buffer: inout [UInt8]) throws(HTTP1SerializationError)
    {
        guard (0...9).contains(version.major), (0...9).contains(version.minor) else {
            throw HTTP1SerializationError(reason: "HTTP version is not single-digit")
        }
        buffer.append(contentsOf: [0x48, 0x54, 0x54, 0x50, 0x2F])  // "HTTP/"
        buffer.append(0x30 &+ UInt8(version.major))
        buffer.append(0x2E)
        buffer.append(0x30 &+ UInt8(version.minor))
    }

    private static func writeHeaders(_ headers: HTTPFields, into buffer: inout [UInt8]) throws(HTTP1SerializationError)
    {
        try writeFields(of: headers, into: &buffer)
        writeEndOfHead(into: &buffer)
    }

    /// Appends the header line of the field at `index` of `headers`, from its bytes (validated as in
    /// ``writeField(name:value:into:)`` unless the HTTP/1 parser read it).
    package static func writeField(
        at index: Int, of headers: HTTPFields, into buffer: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        let failure: HTTP1SerializationError? = headers.withRegions(ifEmpty: nil) { entries, bytes, header in
            guard index >= 0 && index < header.count else { return nil }
            return appendField(entries[index], bytes: bytes, into: &buffer)
        }
        if let failure { throw failure }
    }

    /// Appends `name: value CRLF` for `entry`; the error, and nothing appended, for a field that is not valid.
    @inline(__always)
    private static func appendField(
        _ entry: HTTPFieldEntry, bytes: UnsafeMutablePointer<UInt8>, into buffer: inout [UInt8]
    ) -> HTTP1SerializationError? {
        if let failure = checkField(entry, bytes: bytes) { return failure }
        appendFieldLine(
            name: UnsafeBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
            value: UnsafeBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)),
            to: &buffer)
        return nil
    }

    /// Appends a header line per field of `headers` for which `include` (given the field's name token) is true, from
    /// the fields' bytes: a field the HTTP/1 parser read is copied as it is, any other is validated as in
    /// ``writeField(name:value:into:)``.
    package static func writeFields(
        of headers: HTTPFields, into buffer: inout [UInt8], where include: (HTTPFieldName) -> Bool = { _ in true }
    ) throws(HTTP1SerializationError) {
        let failure: HTTP1SerializationError? = headers.withRegions(ifEmpty: nil) { entries, bytes, header in
            var needed = 0
            for index in 0..<header.count { needed += entries[index].byteCount + 4 }
            guard needed <= maxStackSection else {
                buffer.reserveCapacity(buffer.count + needed)
                for index in 0..<header.count {
                    let entry = entries[index]
                    guard include(entry.token) else { continue }
                    if let failure = appendField(entry, bytes: bytes, into: &buffer) { return failure }
                }
                return nil
            }
            // The lines are assembled on the stack and appended at once (one append per section, not per field).
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: needed) { lines in
                guard let start = lines.baseAddress else { return nil }
                var length = 0
                for index in 0..<header.count {
                    let entry = entries[index]
                    guard include(entry.token) else { continue }
                    if let failure = checkField(entry, bytes: bytes) { return failure }
                    length += writeFieldLine(entry, bytes: bytes, to: start + length)
                }
                buffer.append(contentsOf: UnsafeBufferPointer(start: start, count: length))
                return nil
            }
        }
        if let failure { throw failure }
    }

    /// The largest header section ``writeFields(of:into:where:)`` assembles on the stack.
    private static let maxStackSection = 8192

    /// The error for a field not checked when it was added (not from the parser) whose name is not a token or whose
    /// value has a byte no field value may hold; nil for a valid field.
    @inline(__always)
    static func checkField(
        _ entry: HTTPFieldEntry, bytes: UnsafeMutablePointer<UInt8>
    ) -> HTTP1SerializationError? {
        guard entry.flags & HTTPFieldEntry.validated == 0 else { return nil }
        let name = UnsafeBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount))
        guard HTTP1Grammar.isToken(name) else {
            return HTTP1SerializationError(reason: "header name is not a token")
        }
        if !HTTP1Grammar.areFieldValueBytes(
            UnsafeRawPointer(bytes + Int(entry.valueStart)), count: Int(entry.valueCount))
        {
            return HTTP1SerializationError(reason: "header value contains CR, LF, NUL or another control character")
        }
        return nil
    }

    /// Writes `name: value CRLF` of `entry` at `target` (which has room for its bytes and 4 more); returns the number
    /// of bytes written.
    @inline(__always)
    static func writeFieldLine(
        _ entry: HTTPFieldEntry, bytes: UnsafeMutablePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>
    ) -> Int {
        if entry.isStoredAsLine(in: bytes) {
            // `name: value` is one run of the storage: one copy, then CR LF.
            let length = Int(entry.nameCount) &+ HTTPFieldEntry.separatorCount &+ Int(entry.valueCount)
            target.update(from: bytes + Int(entry.nameStart), count: length)
            target[length] = HTTP1Grammar.cr
            target[length &+ 1] = HTTP1Grammar.lf
            return length &+ 2
        }
        return writeFieldLine(
            name: UnsafeBufferPointer(start: bytes + Int(entry.nameStart), count: Int(entry.nameCount)),
            value: UnsafeBufferPointer(start: bytes + Int(entry.valueStart), count: Int(entry.valueCount)),
            to: target)
    }

    /// Writes `name: value CRLF` at `target` (which has room for both and 4 more bytes); returns the number of bytes
    /// written.
    @inline(__always)
    static func writeFieldLine(
        name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, to target: UnsafeMutablePointer<UInt8>
    ) -> Int {
        if let base = name.baseAddress { target.update(from: base, count: name.count) }
        target[name.count] = HTTP1Grammar.colon
        target[name.count + 1] = HTTP1Grammar.sp
        if let base = value.baseAddress { (target + name.count + 2).update(from: base, count: value.count) }
        target[name.count + value.count + 2] = HTTP1Grammar.cr
        target[name.count + value.count + 3] = HTTP1Grammar.lf
        return name.count + value.count + 4
    }

    private static func writeChunkSize(_ size: Int, into buffer: inout [UInt8]) {
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var value = UInt64(UInt(bitPattern: size))
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                let nibble = UInt8(truncatingIfNeeded: value & 0xF)
                raw[15 - count] = nibble < 10 ? 0x30 &+ nibble : 0x61 &+ nibble &- 10
                value >>= 4
                count += 1
            } while value != 0 && count < 16
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[(16 - count)...]))
        }
        buffer.append(HTTP1Grammar.cr)
        buffer.append(HTTP1Grammar.lf)
    }

    /// Precomputed HTTP/1.1 status lines for the most common statuses with their standard reason phrase.
    static func commonStatusLine(_ status: Int, reason: String) -> StaticString? {
        let line: StaticString
        switch status {
        case 100: line = "HTTP/1.1 100 Continue\r\n"
        case 101: line = "HTTP/1.1 101 Switching Protocols\r\n"
        case 200: line = "HTTP/1.1 200 OK\r\n"
        case 201: line = "HTTP/1.1 201 Created\r\n"
        case 204: line = "HTTP/1.1 204 No Content\r\n"
        case 206: line = "HTTP/1.1 206 Partial Content\r\n"
        case 301: line = "HTTP/1.1 301 Moved Permanently\r\n"
        case 302: line = "HTTP/1.1 302 Found\r\n"
        case 304: line = "HTTP/1.1 304 Not Modified\r\n"
        case 400: line = "HTTP/1.1 400 Bad Request\r\n"
        case 401: line = "HTTP/1.1 401 Unauthorized\r\n"
        case 403: line = "HTTP/1.1 403 Forbidden\r\n"
        case 404: line = "HTTP/1.1 404 Not Found\r\n"
        case 405: line = "HTTP/1.1 405 Method Not Allowed\r\n"
        case 408: line = "HTTP/1.1 408 Request Timeout\r\n"
        case 413: line = "HTTP/1.1 413 Content Too Large\r\n"
        case 414: line = "HTTP/1.1 414 URI Too Long\r\n"
        case 417: line = "HTTP/1.1 417 Expectation Failed\r\n"
        case 429: line = "HTTP/1.1 429 Too Many Requests\r\n"
        case 431: line = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        case 500: line = "HTTP/1.1 500 Internal Server Error\r\n"
        case 501: line = "HTTP/1.1 501 Not Implemented\r\n"
        case 502: line = "HTTP/1.1 502 Bad Gateway\r\n"
        case 503: line = "HTTP/1.1 503 Service Unavailable\r\n"
        case 504: line = "HTTP/1.1 504 Gateway Timeout\r\n"
        case 505: line = "HTTP/1.1 505 HTTP Version Not Supported\r\n"
        default: return nil
        }
        // The line holds the standard phrase; use it only if the head carries that phrase.
        guard reason == HTTPStatus.reasonPhrase(for: status) else { return nil }
        return line
    }
}
