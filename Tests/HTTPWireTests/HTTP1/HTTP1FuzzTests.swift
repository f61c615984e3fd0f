import Testing

@testable import HTTPWire

/// Seeded mutation runs in the spirit of docs/reliability.md §2.12 FUZZ-01..03: no input traps, accepted heads stay
/// within limits and survive a serialize/parse round trip, and the result never depends on how input is split.
@Suite struct HTTP1FuzzTests {
    private static let seeds: [[UInt8]] = (validRequestCases.map(\.input) + hostileRequestCases.prefix(60).map(\.input))

    private static let interesting: [UInt8] = [
        0x00, 0x09, 0x0A, 0x0D, 0x20, 0x22, 0x2C, 0x3A, 0x3B, 0x30, 0x66, 0x7F, 0x80, 0xFF
    ]

    private func mutate(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let edits = Int.random(in: 1...4, using: &generator)
        for _ in 0..<edits {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0 where !bytes.isEmpty:
                bytes[position] = Self.interesting.randomElement(using: &generator) ?? 0
            case 1:
                bytes.insert(Self.interesting.randomElement(using: &generator) ?? 0, at: position)
            case 2 where !bytes.isEmpty:
                bytes.remove(at: position)
            default:
                bytes.insert(UInt8.random(in: 0...255, using: &generator), at: position)
            }
        }
        return bytes
    }

    @Test func mutatedRequestsNeverTrapAndAreSplitIndependent() throws {
        var generator = SplitMix64(seed: 0xC0FFEE)
        let limits = HTTP1ParserLimits()
        var accepted = 0
        for iteration in 0..<1500 {
            let seed = Self.seeds[iteration % Self.seeds.count]
            let input = mutate(seed, using: &generator)
            let whole = requestEvents(input, limits: limits)
            let split = requestEvents(input, sizes: randomSizes(seed: UInt64(iteration), maxPiece: 9), limits: limits)
            #expect(split == whole)
            for event in whole {
                guard case .head(let head, let framing) = event else { continue }
                accepted += 1
                #expect(head.headers.count <= limits.maxHeaders)
                if case .contentLength(let length) = framing { #expect(length >= 0 && length <= limits.maxBodyBytes) }
                // FUZZ-01: serialize(parse(x)) parses to the same head.
                var wire: [UInt8] = []
                try HTTP1Serializer.writeRequestHead(head, into: &wire)
                var parser = HTTP1RequestParser(limits: limits)
                parser.append(wire)
                guard case .head(let again, let againFraming)? = parser.next() else {
                    Issue.record("re-serialized head did not parse: \(head)")
                    continue
                }
                #expect(again == head)
                #expect(againFraming == framing)
            }
            if case .error(let error)? = whole.last {
                #expect([400, 413, 414, 431, 501, 505].contains(error.status))
            }
        }
        #expect(accepted > 100)
    }

    @Test func mutatedResponsesNeverTrapAndFramingIsUnique() {
        let responses: [[UInt8]] =
            [
                bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
                bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n"),
                bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\r\n\r\ngone")
            ] + hostileResponseCases.map(\.input)
        var generator = SplitMix64(seed: 0xBEEF)
        for iteration in 0..<1500 {
            let input = mutate(responses[iteration % responses.count], using: &generator)
            let whole = responseEvents(input, close: true)
            let split = responseEvents(input, sizes: randomSizes(seed: UInt64(iteration), maxPiece: 7), close: true)
            #expect(split.events == whole.events)
            for event in whole.events {
                guard case .head(let head, let framing) = event else { continue }
                // FUZZ-03: one framing decision, never both CL and TE.
                #expect(
                    !(head.headers.contains(name: "Content-Length") && head.headers.contains(name: "Transfer-Encoding"))
                )
                if case .chunked = framing { #expect(head.headers.contains(name: "Transfer-Encoding")) }
            }
        }
    }

    @Test func chunkedBodyByteCountEqualsSumOfChunkSizes() {
        // FUZZ-02: however the input is split, the decoded body is the concatenation of the chunks.
        var generator = SplitMix64(seed: 7)
        for iteration in 0..<200 {
            var wire = bytes("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
            var body: [UInt8] = []
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                let size = Int.random(in: 1...300, using: &generator)
                let piece = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
                body += piece
                HTTP1Serializer.writeChunk(piece, into: &wire)
            }
            HTTP1Serializer.writeLastChunk(into: &wire)
            let events = requestEvents(wire, sizes: randomSizes(seed: UInt64(iteration), maxPiece: 64))
            let decoded = events.reduce(into: [UInt8]()) { result, event in
                if case .body(let chunk) = event { result += chunk }
            }
            #expect(decoded == body)
            #expect(events.last == .end)
        }
    }
}
