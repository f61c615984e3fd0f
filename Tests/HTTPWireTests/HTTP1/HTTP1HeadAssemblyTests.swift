import Testing

@testable import HTTPWire

/// A request head assembled in one pass (``HTTP1HeadAssembly``) is byte for byte the head the serializer writes line by
/// line, and fails on the same invalid parts, appending nothing.
@Suite struct HTTP1HeadAssemblyTests {
    private static func assemble(
        method: HTTPMethod, target: String, fields: HTTPFields, extraName: String, extraValue: String,
        into output: inout [UInt8]
    ) throws(HTTP1SerializationError) {
        let capacity =
            HTTP1HeadAssembly.requestLineCapacity(method: method, target: target)
            + HTTP1HeadAssembly.fieldsCapacity(fields)
            + HTTP1HeadAssembly.fieldCapacity(name: extraName, value: extraValue)
            + HTTP1HeadAssembly.contentLengthCapacity + 2
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) {
            region throws(HTTP1SerializationError) in
            var assembly = HTTP1HeadAssembly(region)
            assembly.appendRequestLine(method: method, target: target, version: .http1_1)
            assembly.appendFields(of: fields) { $0 == .connection ? .skip : .write }
            assembly.appendField(name: extraName, value: extraValue)
            assembly.appendContentLength(12)
            assembly.appendEndOfHead()
            try assembly.finish(into: &output)
        }
    }

    @Test func aRequestHeadIsTheSerializersLineByLine() throws {
        let fields: HTTPFields = ["Host": "example.com", "Connection": "close", "Accept": "*/*"]
        var assembled: [UInt8] = [7]
        try Self.assemble(
            method: .post, target: "/a?b=c", fields: fields, extraName: "X-Extra", extraValue: "v\tw",
            into: &assembled)
        var expected: [UInt8] = [7]
        try HTTP1Serializer.writeRequestLine(method: .post, target: "/a?b=c", version: .http1_1, into: &expected)
        try HTTP1Serializer.writeFields(of: fields, into: &expected) { $0 != .connection }
        try HTTP1Serializer.writeField(name: "X-Extra", value: "v\tw", into: &expected)
        HTTP1Serializer.writeContentLength(12, into: &expected)
        HTTP1Serializer.writeEndOfHead(into: &expected)
        #expect(assembled == expected)
        #expect(
            String(decoding: assembled.dropFirst(), as: UTF8.self)
                == "POST /a?b=c HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-Extra: v\tw\r\nContent-Length: 12\r\n\r\n"
        )
    }

    @Test func anInvalidPartFailsTheHeadWhole() {
        for (method, target, name, value) in [
            (HTTPMethod("G T"), "/", "X", "v"), (.get, "", "X", "v"), (.get, "/a b", "X", "v"),
            (.get, "/", "Bad Name", "v"), (.get, "/", "X", "a\r\nInjected: 1"), (.get, "/", "X", "nul\0")
        ] {
            var output: [UInt8] = [1]
            #expect(throws: HTTP1SerializationError.self) {
                try Self.assemble(
                    method: method, target: target, fields: ["Host": "h"], extraName: name, extraValue: value,
                    into: &output)
            }
            #expect(output == [1])
        }
    }
}
