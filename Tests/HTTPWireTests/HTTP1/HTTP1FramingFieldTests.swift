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
