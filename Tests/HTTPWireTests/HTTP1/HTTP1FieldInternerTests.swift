import Testing

@testable import HTTPWire

@Suite struct HTTP1FieldInternerTests {
    private func interned(_ interner: inout HTTP1FieldInterner, _ text: String) -> String {
        Array(text.utf8).withUnsafeBytes { interner.string($0) }
    }

    private func storage(_ string: String) -> UnsafeRawPointer? {
        var string = string
        return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    @Test func longValuesSeenAgainAreTheSameStringAndOthersAreExact() {
        var interner = HTTP1FieldInterner()
        let date = interned(&interner, "Tue, 24 Nov 2026 08:58:30 GMT")
        let again = interned(&interner, "Tue, 24 Nov 2026 08:58:30 GMT")
        #expect(again == date)
        #expect(storage(again) == storage(date), "the kept string is handed out, not a new copy")
        let next = interned(&interner, "Tue, 24 Nov 2026 08:58:31 GMT")
        #expect(next == "Tue, 24 Nov 2026 08:58:31 GMT", "same length, different bytes: a new string")
        #expect(interned(&interner, "text/plain") == "text/plain", "short strings are made as usual")
        let invalid: [UInt8] = Array("application/json".utf8) + [0xFF, 0xFE]
        let repaired = invalid.withUnsafeBytes { interner.string($0) }
        #expect(repaired == "application/json\u{FFFD}\u{FFFD}")
        #expect(invalid.withUnsafeBytes { interner.string($0) } == repaired, "decoding the same bytes gives the same")
    }

    @Test func keepsOnlyTheLastFewAndStaysCorrectPastThem() {
        var interner = HTTP1FieldInterner()
        let values = (0..<(HTTP1FieldInterner.capacity * 3)).map { "x-long-header-value-\($0)" }
        for round in 0..<3 {
            for value in values { #expect(interned(&interner, value) == value, "round \(round)") }
        }
    }

    /// Ported from the check that a connection's parser handed out the same interned strings for long fields message
    /// after message: the parsers now keep fields as bytes (`HTTPFields`' storage) and make no string at all, so what
    /// is left to hold is that each message's head keeps its own fields while the parser goes on to the next.
    @Test func aConnectionsResponsesKeepTheirLongFieldsAcrossMessages() {
        var parser = HTTP1ResponseParser(limits: .init())
        var heads: [HTTPResponseHead] = []
        for body in ["one", "two"] {
            parser.expectResponse(to: .get)
            parser.append(
                bytes(
                    "HTTP/1.1 200 OK\r\nDate: Tue, 24 Nov 2026 08:58:30 GMT\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 3\r\n\r\n\(body)"))
            while let event = parser.next() {
                if case .head(let head, _) = event { heads.append(head) }
                if case .end = event { break }
            }
        }
        #expect(heads.count == 2)
        let dates = heads.compactMap { $0.headers.first(name: "Date") }
        #expect(dates == ["Tue, 24 Nov 2026 08:58:30 GMT", "Tue, 24 Nov 2026 08:58:30 GMT"])
        #expect(heads[0].headers.token(at: 0) == .date && heads[1].headers.token(at: 1) == .contentType)
        #expect(heads.allSatisfy { $0.headers.first(name: "Content-Type") == "application/json" })
        #expect(heads.allSatisfy { $0.headers.count == 3 })
    }
}
