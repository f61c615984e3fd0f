import Testing

@testable import HTTPWire

/// The framing fields of a section (Host, Content-Length, Transfer-Encoding) are noted as a count and the first
/// position; a repeated one is found again by its token. These cases repeat them apart from each other and more than
/// twice, so every position is visited.
@Suite struct HTTP1FramingFieldTests {
    @Test func equalContentLengthsApartAreOneLength() {
        let input = bytes(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: up\r\nContent-Length: 5\r\nX-A: b\r\n"
                + "Content-Length: 5\r\n\r\nhello")
        let events = responseEvents(input).events
        guard case .head(_, let framing)? = events.first else {
            Issue.record("expected a head, got \(events)")
            return
        }
        #expect(framing == .contentLength(5))
        #expect(events.last == .end)
    }

    @Test func aThirdDifferingContentLengthIsRefused() {
        let input = bytes(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\nServer: up\r\nContent-Length: 6\r\n\r\n"
                + "hello!")
        guard case .error(let error)? = responseEvents(input).events.last else {
            Issue.record("expected an error")
            return
        }
        #expect(error.status == 502)
    }

    @Test func transferCodingsAcrossFieldsAreAllRead() {
        // `gzip` in one field and `chunked` in a later one: two codings, refused (only a single `chunked` is read).
        let input = bytes(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nServer: up\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        guard case .error? = responseEvents(input).events.last else {
            Issue.record("expected an error")
            return
        }
        let single = bytes("HTTP/1.1 200 OK\r\nServer: up\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        let events = responseEvents(single).events
        guard case .head(_, let framing)? = events.first else {
            Issue.record("expected a head, got \(events)")
            return
        }
        #expect(framing == .chunked)
        #expect(events.contains(.body(bytes("hello"))))
    }

    @Test func aSecondHostApartIsRefused() {
        let input = bytes("GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: t\r\nHost: b\r\n\r\n")
        #expect(errorStatus(requestEvents(input)) == 400)
    }
}

/// The receive buffer writes new bytes over bytes already read once everything was consumed: what it hands out is
/// always exactly the bytes appended and not yet consumed, whatever the lengths before.
@Suite struct HTTP1ByteBufferReuseTests {
    private func readable(_ buffer: HTTP1ByteBuffer) -> [UInt8] {
        buffer.withReadableBytes { Array($0) }
    }

    @Test func shorterBytesAfterEverythingWasReadAreReadAlone() {
        var buffer = HTTP1ByteBuffer()
        buffer.append(bytes("GET /long-path HTTP/1.1\r\n"))
        buffer.consumeAll()
        buffer.append(bytes("abc"))
        #expect(readable(buffer) == bytes("abc"))
        #expect(buffer.byte(at: 3) == nil)
        buffer.consume(1)
        buffer.append(bytes("defghijklmnopqrstuvwxyz0123456789"))
        #expect(readable(buffer) == bytes("bcdefghijklmnopqrstuvwxyz0123456789"))
        #expect(buffer.read(4) == bytes("bcde"))
        buffer.consume(100)
        #expect(buffer.readableCount == 0)
        buffer.append(bytes("xy"))
        #expect(buffer.read(10) == bytes("xy"))
    }

    @Test func compactionKeepsTheUnreadBytes() {
        var buffer = HTTP1ByteBuffer()
        let first = [UInt8](repeating: 7, count: 10_000)
        buffer.append(first)
        buffer.consume(9_000)
        let more = [UInt8](0..<200)
        buffer.append(more)
        #expect(readable(buffer) == [UInt8](repeating: 7, count: 1_000) + more)
        #expect(buffer.readIndex == 0)
        buffer.consumeAll()
        buffer.append(bytes("z"))
        #expect(readable(buffer) == bytes("z"))
    }
}

/// The section reader appends a field with only a room check once it appended in the same call: a copy of the
/// headers taken between calls keeps its fields, and a section outgrowing the first room still reads in order.
@Suite struct HTTP1FieldSectionReaderRoomTests {
    private func pairs(_ fields: HTTPFields) -> [String] {
        (0..<fields.count).map {
            let field = fields.field(at: $0)
            return "\(field.name)=\(field.value)"
        }
    }

    @Test func copiesTakenBetweenCallsKeepTheirFields() {
        var reader = HTTP1FieldSectionReader()
        var buffer = HTTP1ByteBuffer()
        var copies: [(HTTPFields, [String])] = []
        for line in ["A: 1\r\nB: 2\r\n", "C: 3\r\n", "D: 4\r\nE: 5\r\n"] {
            buffer.append(bytes(line))
            guard case .needMore = reader.read(&buffer, maxBytes: 8192, maxFields: 100, sizeStatus: 431) else {
                Issue.record("the section is not complete yet")
                return
            }
            let copy = reader.headers
            copies.append((copy, pairs(copy)))
        }
        buffer.append(bytes("\r\n"))
        guard case .complete = reader.read(&buffer, maxBytes: 8192, maxFields: 100, sizeStatus: 431) else {
            Issue.record("the section must be complete")
            return
        }
        #expect(pairs(reader.headers) == ["A=1", "B=2", "C=3", "D=4", "E=5"])
        #expect(copies.map { pairs($0.0) } == copies.map { $0.1 })
        #expect(copies.map { $0.1 } == [["A=1", "B=2"], ["A=1", "B=2", "C=3"], ["A=1", "B=2", "C=3", "D=4", "E=5"]])
    }

    @Test func aSectionOutgrowingItsFirstRoomReadsInOrder() {
        var reader = HTTP1FieldSectionReader()
        var buffer = HTTP1ByteBuffer()
        // A short first line sizes the room small; the long lines after it arrive in the same call.
        var section = ""
        var expected = ["X=y"]
        for index in 0..<90 {
            let value = String(repeating: Character(String(index % 10)), count: 40 + index * 7)
            section += "Field-\(index): \(value)\r\n"
            expected.append("Field-\(index)=\(value)")
        }
        buffer.append(bytes("X: y\r\n"))
        _ = reader.read(&buffer, maxBytes: 65536, maxFields: 100, sizeStatus: 431)
        buffer.append(bytes(section + "\r\n"))
        guard case .complete = reader.read(&buffer, maxBytes: 65536, maxFields: 100, sizeStatus: 431) else {
            Issue.record("the section must be complete")
            return
        }
        #expect(pairs(reader.headers) == expected)
    }
}
