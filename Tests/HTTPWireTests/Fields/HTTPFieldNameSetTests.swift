import Testing

@testable import HTTPWire

/// Sets of known field names, and the list operations that take a name's token instead of looking it up.
@Suite struct HTTPFieldNameSetTests {
    @Test func aSetHoldsItsKnownNamesAndNeverOther() {
        let set = HTTPFieldNameSet([.host, .via, .accessControlAllowOrigin, .other])
        #expect(set.contains(.host))
        #expect(set.contains(.via))
        #expect(set.contains(.accessControlAllowOrigin), "the last name of the table")
        #expect(!set.contains(.other), "a name outside the table is never a member")
        #expect(!set.contains(.cookie))
        #expect(!HTTPFieldNameSet([]).contains(.host))
    }

    @Test func tokensAreFoundInAnySpelling() {
        #expect(HTTPFields.token(of: "X-FORWARDED-for") == .xForwardedFor)
        #expect(HTTPFields.token(of: "X-Team") == .other)
        let fields = HTTPFields([("Accept", "a"), ("via", "1.0 edge"), ("VIA", "1.1 cache"), ("X-Team", "t")])
        #expect(fields.firstIndex(token: .via) == 1)
        #expect(fields.firstIndex(token: .via, from: 2) == 2)
        #expect(fields.firstIndex(token: .via, from: 3) == nil)
        #expect(fields.firstIndex(token: .other) == nil, "other names no single field")
        #expect(fields.first(.via) == "1.0 edge", "the first of the repeated field")
        #expect(fields.first(.host) == nil)
    }

    @Test func fieldsAddedWithTheirTokenAreFoundAndSerialisedLikeOthers() throws {
        let client = HTTPFields([("Host", "api.example:8080")])
        var fields = HTTPFields()
        fields.add(knownName: "X-Request-Id", token: .xRequestId, value: "r1")
        fields.add(knownName: "X-Forwarded-Host", token: .xForwardedHost, valueOfFieldAt: 0, of: client)
        #expect(fields.first(name: "x-request-id") == "r1")
        #expect(fields.first(name: "X-Forwarded-Host") == "api.example:8080")
        #expect(fields.token(at: 1) == .xForwardedHost)
        #expect(fields == HTTPFields([("X-Request-Id", "r1"), ("X-Forwarded-Host", "api.example:8080")]))
        var bytes: [UInt8] = []
        try HTTP1Serializer.writeFields(of: fields, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "X-Request-Id: r1\r\nX-Forwarded-Host: api.example:8080\r\n")
    }

    @Test func aStaticFieldIsAddedAsCheckedWithItsToken() throws {
        var fields = HTTPFields([("Accept", "*/*")])
        fields.add(knownName: "X-Forwarded-Proto", token: .xForwardedProto, staticValue: "https")
        #expect(fields.count == 2)
        #expect(fields.token(at: 1) == .xForwardedProto)
        #expect(fields.first(.xForwardedProto) == "https")
        #expect(fields.isValidated(at: 1), "static text the caller wrote is not checked again")
        var bytes: [UInt8] = []
        try HTTP1Serializer.writeFields(of: fields, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "Accept: */*\r\nX-Forwarded-Proto: https\r\n")
    }

    @Test func aValueAddedWithItsTokenIsStillCheckedWhenSerialised() {
        var fields = HTTPFields()
        fields.add(knownName: "Via", token: .via, value: "1.1 a\r\nX-Injected: 1")
        var bytes: [UInt8] = []
        #expect(throws: HTTP1SerializationError.self) { try HTTP1Serializer.writeFields(of: fields, into: &bytes) }
    }
}
