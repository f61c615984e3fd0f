import Testing

@testable import HTTPWire

/// The byte storage behind `HTTPFields`: order, case-insensitive lookup by token and by bytes, replacing and removing,
/// copies that do not share writes, growth past the first block, and the parser's and serializer's use of the bytes.
@Suite struct HTTPFieldsStorageTests {
    private func pairs(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name): \($0.value)" } }

    @Test func fieldsKeepTheirOrderSpellingAndRepeats() {
        var headers = HTTPFields()
        headers.add(name: "Host", value: "example.com")
        headers.add(name: "X-Custom-Header-Name", value: "a value longer than fifteen bytes")
        headers.add(name: "x-custom-header-name", value: "second")
        headers.add(name: "Accept", value: "*/*")
        #expect(
            pairs(headers) == [
                "Host: example.com", "X-Custom-Header-Name: a value longer than fifteen bytes",
                "x-custom-header-name: second", "Accept: */*"
            ])
        #expect(headers.count == 4)
        #expect(headers.name(at: 1) == "X-Custom-Header-Name")
        #expect(headers.value(at: 2) == "second")
        #expect(headers.token(at: 0) == .host)
        #expect(headers.token(at: 1) == .other)
        #expect(headers.token(at: 9) == .other, "out of range reads as no field")
    }

    @Test func lookupIgnoresASCIICaseForKnownAndOtherNames() {
        let headers: HTTPFields = ["CONTENT-type": "text/plain", "X-Trace": "1", "x-TRACE": "2", "Via": "1.1 a"]
        #expect(headers.first(name: "Content-Type") == "text/plain")
        #expect(headers.first(name: "content-type") == "text/plain")
        #expect(headers["x-trace"] == ["1", "2"])
        #expect(headers.firstIndex(name: "X-TRACE") == 1)
        #expect(headers.firstIndex(name: "x-trace", from: 2) == 2)
        #expect(headers.firstIndex(name: "x-trace", from: 3) == nil)
        #expect(headers.contains(name: "VIA"))
        #expect(!headers.contains(name: "X-Trac"), "a prefix is another name")
        #expect(!headers.contains(name: "X-Tracf"), "same length, other bytes")
        #expect(headers.contains(name: "x-trace") { $0 == "2" })
        #expect(!headers.contains(name: "x-trace") { $0 == "3" })
        #expect(HTTPFieldName("TRANSFER-ENCODING") == .transferEncoding)
        #expect(HTTPFieldName("Transfer-Encodinh") == .other)
        #expect(HTTPFieldName("").rawValue == 0)
        #expect(HTTPFieldName("keep-alive").isHopByHop && HTTPFieldName("Upgrade").isHopByHop)
        #expect(!HTTPFieldName("Host").isHopByHop && !HTTPFieldName("X-Other").isHopByHop)
    }

    /// Every name of the table is found in any case, and a name differing in one byte (or one byte longer or shorter)
    /// is not: the word-at-a-time comparison ignores only a letter's case.
    @Test func everyTableNameIsFoundInAnyCaseAndNoNeighbourIs() {
        for (raw, spelling) in HTTPFieldName.spellings.enumerated() where raw > 0 {
            let expected = HTTPFieldName(rawValue: UInt8(raw))
            #expect(HTTPFieldName(spelling) == expected, "\(spelling)")
            #expect(HTTPFieldName(spelling.uppercased()) == expected, "\(spelling)")
            let mixed = String(
                spelling.enumerated().map { $0.offset % 2 == 0 ? Character($0.element.uppercased()) : $0.element })
            #expect(HTTPFieldName(mixed) == expected, "\(mixed)")
            #expect(HTTPFieldName(spelling + "x") != expected)
            #expect(HTTPFieldName(String(spelling.dropLast())) != expected)
            let bytes = Array(spelling.utf8)
            for index in bytes.indices {
                for replacement: UInt8 in [bytes[index] ^ 0x20, bytes[index] ^ 0x01, 0x0D, 0x5F, 0xC3] {
                    var changed = bytes
                    changed[index] = replacement
                    let name = changed.withUnsafeBytes { HTTPFieldName(bytes: $0) }
                    let sameLetter =
                        (bytes[index] | 0x20) >= 0x61 && (bytes[index] | 0x20) <= 0x7A
                        && replacement == bytes[index] ^ 0x20
                    #expect(
                        sameLetter ? name == expected : name != expected, "\(spelling) byte \(index) -> \(replacement)")
                }
            }
        }
    }

    @Test func replacingAndRemovingKeepTheRestInOrder() {
        var headers = HTTPFields([("A", "1"), ("Cookie", "x=1"), ("B", "2"), ("cookie", "y=2"), ("C", "3")])
        headers.replaceOrAdd(name: "COOKIE", value: "z=3")
        #expect(pairs(headers) == ["A: 1", "Cookie: z=3", "B: 2", "C: 3"])
        headers.remove(name: "b")
        #expect(pairs(headers) == ["A: 1", "Cookie: z=3", "C: 3"])
        headers.remove(name: "not-there")
        #expect(headers.count == 3)
        headers.setValue("a much longer value than the one before it", at: 0)
        #expect(pairs(headers) == ["A: a much longer value than the one before it", "Cookie: z=3", "C: 3"])
        headers.removeAll { token, _ in token == .cookie }
        #expect(pairs(headers) == ["A: a much longer value than the one before it", "C: 3"])
        headers.removeAll { _, _ in true }
        #expect(headers.isEmpty)
        headers.add(name: "D", value: "4")
        #expect(pairs(headers) == ["D: 4"])
    }

    @Test func aCopyIsNotChangedByWritesToTheOriginal() {
        var original: HTTPFields = ["A": "1"]
        let copy = original
        original.add(name: "B", value: "2")
        original.replaceOrAdd(name: "A", value: "changed")
        #expect(pairs(copy) == ["A: 1"])
        #expect(pairs(original) == ["A: changed", "B: 2"])
        var second = copy
        second.remove(name: "A")
        #expect(pairs(copy) == ["A: 1"])
        #expect(second.isEmpty)
    }

    @Test func fieldsMoveBetweenListsAsBytes() {
        let source = HTTPFields([("Server", "nginx"), ("Set-Cookie", "a=b"), ("X-Long-Name-Of-A-Field", "v")])
        var target = HTTPFields()
        for index in 0..<source.count where source.token(at: index) != .server {
            target.add(fieldAt: index, of: source)
        }
        target.add(fieldAt: 7, of: source)
        #expect(pairs(target) == ["Set-Cookie: a=b", "X-Long-Name-Of-A-Field: v"])
        #expect(target.token(at: 0) == .setCookie)
        var appended: HTTPFields = ["First": "0"]
        appended.append(contentsOf: source)
        appended.append(contentsOf: HTTPFields())
        #expect(pairs(appended) == ["First: 0", "Server: nginx", "Set-Cookie: a=b", "X-Long-Name-Of-A-Field: v"])
        var selfAppended = source
        selfAppended.append(contentsOf: selfAppended)
        #expect(selfAppended.count == 6)
        #expect(pairs(source).count == 3)
    }

    @Test func manyFieldsAndLongValuesGrowTheStorage() {
        var headers = HTTPFields()
        let long = String(repeating: "v", count: 5000)
        for index in 0..<300 { headers.add(name: "X-Field-\(index)", value: index % 50 == 0 ? long : "\(index)") }
        #expect(headers.count == 300)
        #expect(headers.first(name: "x-field-299") == "299")
        #expect(headers.first(name: "X-FIELD-250") == long)
        #expect(headers.value(at: 17) == "17")
        var bytes = 0
        headers.forEachField { _, name, value in bytes += name.count + value.count }
        #expect(bytes == headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
    }

    @Test func emptyValuesAndNonASCIIStayAsGiven() {
        var headers: HTTPFields = ["X-Empty": "", "X-Name": "café ☕"]
        headers.add(name: "X-Also-Empty", value: "")
        #expect(headers.first(name: "x-empty") == "")
        #expect(headers["X-Also-Empty"] == [""])
        #expect(headers.first(name: "x-name") == "café ☕")
        var buffer: [UInt8] = []
        #expect(throws: Never.self) { try HTTP1Serializer.writeFields(of: headers, into: &buffer) }
        #expect(buffer == Array("X-Empty: \r\nX-Name: café ☕\r\nX-Also-Empty: \r\n".utf8))
    }

    @Test func equalityAndHashingFollowTheFieldsBytesInOrder() {
        let a: HTTPFields = ["A": "1", "B": "2"]
        var b = HTTPFields()
        b.add(name: "A", value: "1")
        b.add(name: "B", value: "2")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != ["B": "2", "A": "1"])
        #expect(a != ["a": "1", "B": "2"], "names keep their case in equality, as before")
        #expect(HTTPFields() == HTTPFields([]))
        var removed = b
        removed.remove(name: "B")
        removed.add(name: "B", value: "2")
        #expect(removed == a, "bytes left behind by a removal are not compared")
    }

    @Test func theParserFillsTheStorageAndTheSerializerWritesItBack() throws {
        var parser = HTTP1RequestParser()
        let request =
            "GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: a-client/1.2.3 (a long one)\r\nX-Empty:\r\n"
            + "Accept:   text/html  \r\n\r\n"
        parser.append(Array(request.utf8))
        guard case .head(let head, _)? = parser.next() else {
            Issue.record("no head")
            return
        }
        #expect(
            pairs(head.headers) == [
                "Host: example.com", "User-Agent: a-client/1.2.3 (a long one)", "X-Empty: ",
                "Accept: text/html"
            ])
        #expect(head.headers.token(at: 0) == .host && head.headers.token(at: 1) == .userAgent)
        var out: [UInt8] = []
        try HTTP1Serializer.writeFields(of: head.headers, into: &out) { $0 != .host }
        #expect(
            String(decoding: out, as: UTF8.self)
                == "User-Agent: a-client/1.2.3 (a long one)\r\nX-Empty: \r\nAccept: text/html\r\n")
    }

    /// obs-text that is not valid UTF-8 goes on byte for byte (as nginx forwards it); only a `String` read of it shows
    /// U+FFFD.
    @Test func invalidUTF8InAValueIsForwardedAsReceived() throws {
        var parser = HTTP1RequestParser()
        let value: [UInt8] = [0x61, 0xFF, 0xC3, 0x28, 0x80, 0x62]
        parser.append(Array("GET / HTTP/1.1\r\nHost: h\r\nX-Raw: ".utf8) + value + Array("\r\n\r\n".utf8))
        guard case .head(let head, _)? = parser.next() else {
            Issue.record("no head")
            return
        }
        #expect(head.headers.first(name: "X-Raw") == String(decoding: value, as: UTF8.self))
        #expect(head.headers.withField(at: 1) { _, bytes in Array(bytes) } == value)
        var out: [UInt8] = []
        try HTTP1Serializer.writeFields(of: head.headers, into: &out) { $0 != .host }
        #expect(out == Array("X-Raw: ".utf8) + value + [0x0D, 0x0A])
    }

    @Test func theSerializerStillRefusesFieldsNotReadByTheParser() {
        var buffer: [UInt8] = []
        let badValue: HTTPFields = ["X-Injected": "a\r\nEvil: 1"]
        #expect(throws: HTTP1SerializationError.self) { try HTTP1Serializer.writeFields(of: badValue, into: &buffer) }
        let badName: HTTPFields = ["Bad Name": "1"]
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeField(at: 0, of: badName, into: &buffer)
        }
        let nonASCIIName: HTTPFields = ["Naïve": "1"]
        #expect(throws: HTTP1SerializationError.self) {
            try HTTP1Serializer.writeFields(of: nonASCIIName, into: &buffer)
        }
    }
}
