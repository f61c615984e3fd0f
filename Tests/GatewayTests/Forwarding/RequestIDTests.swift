import Testing

@testable import Gateway

/// Request ids: the client's when it is a safe token, else generated.
@Suite struct RequestIDTests {
    @Test func aGeneratedIDIsFifteenURLSafeCharactersFromTheRandomBits() {
        let allOnes = RequestID.generate((.max, .max))
        #expect(allOnes == String(repeating: "_", count: 15))
        let zeros = RequestID.generate((0, 0))
        #expect(zeros == String(repeating: "0", count: 15))
        // The first word gives the first eight characters, the second the last seven.
        let split = RequestID.generate((0, .max))
        #expect(split == "00000000" + String(repeating: "_", count: 7))
        let generator = RequestIDGenerator()
        let allowed = Set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_".utf8)
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = RequestID.take(from: nil, generator: generator)
            #expect(id.utf8.count == RequestID.length)
            #expect(id.utf8.allSatisfy(allowed.contains))
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    @Test func aClientsSafeIDIsKeptAndAnUnsafeOneReplaced() {
        let generator = RequestIDGenerator()
        #expect(RequestID.take(from: "req-123", generator: generator) == "req-123")
        let uuid = "3f1c2a8e-7b6d-4e5f-9a0b-1c2d3e4f5a6b"
        #expect(RequestID.take(from: uuid, generator: generator) == uuid)
        for unsafe in ["", "has space", "quote\"", String(repeating: "a", count: 129)] {
            #expect(RequestID.take(from: unsafe, generator: generator).utf8.count == RequestID.length, "\(unsafe)")
        }
    }
}
