import HTTPWire

/// `http1-chunked`: the input is a chunked body (RFC 9112 §7.1), sent after a chunked request head to
/// `HTTP1RequestParser` and after a chunked response head to `HTTP1ResponseParser`.
///
/// Checked against a lenient decoder written here: whatever the strict parsers accept, the lenient one accepts too,
/// with the same body and ending at the same byte (the request parser keeps exactly the bytes after the last chunk's
/// trailer section); parsing whole and in pieces agree; the request and response parsers agree; and the body
/// re-encoded by `HTTP1Serializer` (in other chunk sizes) decodes back to itself.
enum HTTP1ChunkedTarget {
    static let target = FuzzTarget(
        name: "http1-chunked",
        summary: "chunked decoding in the request and response parsers, against a reference decoder and a re-encoding",
        maxLength: 16384, dictionary: "http.dict", run: run)

    static let requestHead = Array("POST /upload HTTP/1.1\r\nHost: fuzz\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
    static let responseHead = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)

    struct Decoded: Equatable {
        var body: [UInt8] = []
        var ended = false
        var error: HTTP1ParseError?
        /// Bytes after the body that the parser kept (request parser, when ended).
        var rest = 0
    }

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let stream = requestHead + Array(bytes)
        let whole = try decodeRequest(stream, pieces: [0..<stream.count])
        let split = try decodeRequest(stream, pieces: stream.withUnsafeBytes { FuzzBytes.pieces(of: $0) })
        try check(whole == split, "chunked body parsed whole and in pieces differ:\n\(whole)\n\(split)")
        let response = try decodeResponse(bytes)
        try check(response.ended == whole.ended, "request and response parsers disagree on the end")
        try check(response.body == whole.body, "request and response parsers decode different bodies")
        let reference = lenientDecode(bytes)
        if whole.ended {
            guard let reference else { throw failure("accepted a body the lenient decoder refuses") }
            try check(reference.body == whole.body, "decoded body differs from the reference decoder's")
            try check(
                whole.rest == bytes.count - reference.consumed,
                "ended at byte \(bytes.count - whole.rest), the reference at \(reference.consumed)")
            try checkReencoding(whole.body)
        }
    }

    /// The first request's body from the request parser; stops at its end.
    static func decodeRequest(_ stream: [UInt8], pieces: [Range<Int>]) throws(FuzzFailure) -> Decoded {
        var parser = HTTP1RequestParser()
        var decoded = Decoded()
        var sawHead = false
        var appended = 0
        for piece in pieces {
            stream.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[piece])) }
            appended += piece.count
            while let event = parser.next() {
                switch event {
                case .head(_, let framing):
                    try check(!sawHead && framing == .chunked, "an unexpected head")
                    sawHead = true
                case .body(let chunk):
                    decoded.body += chunk
                case .end:
                    decoded.ended = true
                    decoded.rest = parser.bufferedByteCount + stream.count - appended
                    return decoded
                case .error(let error):
                    decoded.error = error
                    return decoded
                }
            }
        }
        try check(sawHead, "the fixed head was not parsed")
        return decoded
    }

    /// The body from the response parser, with the upstream's close after the bytes.
    static func decodeResponse(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) -> Decoded {
        // The request parser's limits (body and trailer section), so that both decoders run alike.
        let request = HTTP1ParserLimits()
        var parser = HTTP1ResponseParser(
            limits: .init(
                maxHeaderBytes: request.maxHeaderBytes,
                maxHeaders: request.maxHeaders,
                maxBodyBytes: request.maxBodyBytes))
        parser.expectResponse(to: .post)
        parser.append(responseHead)
        parser.append(bytes)
        var decoded = Decoded()
        var event = parser.next()
        var closed = false
        while true {
            if event == nil {
                if closed || decoded.ended { break }
                closed = true
                event = parser.connectionClosed()
                continue
            }
            switch event! {
            case .informational, .head:
                break
            case .body(let chunk):
                decoded.body += chunk
            case .end:
                decoded.ended = true
            case .error(let error):
                decoded.error = error
                return decoded
            }
            event = parser.next()
        }
        return decoded
    }

    /// The body written again as chunks of other sizes and a last chunk decodes back to itself.
    static func checkReencoding(_ body: [UInt8]) throws(FuzzFailure) {
        var wire = requestHead
        body.withUnsafeBytes { raw in
            for piece in FuzzBytes.pieces(of: raw) {
                HTTP1Serializer.writeChunk(UnsafeRawBufferPointer(rebasing: raw[piece]), into: &wire)
            }
        }
        HTTP1Serializer.writeLastChunk(into: &wire)
        let again = try decodeRequest(wire, pieces: [0..<wire.count])
        try check(again.ended && again.body == body && again.rest == 0, "re-encoded body does not decode to itself")
    }

    /// A deliberately lenient chunked decoder (bare LF allowed, anything after the hex size ignored, trailer lines
    /// not checked): a superset of what the strict parsers accept. Returns the body and the bytes it took.
    static func lenientDecode(_ bytes: UnsafeRawBufferPointer) -> (body: [UInt8], consumed: Int)? {
        var index = 0
        var body: [UInt8] = []
        func line() -> Range<Int>? {
            guard let lf = bytes[index...].firstIndex(of: 0x0A) else { return nil }
            var end = lf
            if end > index && bytes[end - 1] == 0x0D { end -= 1 }
            defer { index = lf + 1 }
            return index..<end
        }
        while true {
            guard let sizeLine = line() else { return nil }
            var size: UInt64 = 0
            var digits = 0
            for position in sizeLine {
                let byte = bytes[position]
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
                default: value = 0xFF
                }
                if value == 0xFF { break }
                guard size >> 60 == 0 else { return nil }
                size = size << 4 | UInt64(value)
                digits += 1
            }
            guard digits > 0 else { return nil }
            if size == 0 {
                while true {
                    guard let trailer = line() else { return nil }
                    if trailer.isEmpty { return (body, index) }
                }
            }
            guard size <= UInt64(bytes.count - index) else { return nil }
            body += bytes[index..<(index + Int(size))]
            index += Int(size)
            if index + 1 < bytes.count, bytes[index] == 0x0D, bytes[index + 1] == 0x0A {
                index += 2
            } else if index < bytes.count, bytes[index] == 0x0A {
                index += 1
            } else {
                return nil
            }
        }
    }
}
