import Testing

@testable import Gateway

/// Frame boundaries found in WebSocket bytes however they are split, and the drain's Close frames.
@Suite struct WebSocketFrameScannerTests {
    /// A frame with `length` payload bytes, masked (as a client's) or not, with the header form RFC 6455 §5.2 calls
    /// for: 7-bit lengths up to 125, 16-bit up to 65535, 64-bit beyond.
    static func frame(length: Int, masked: Bool, opcode: UInt8 = 0x2) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length <= 125 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8((UInt64(length) >> (8 * UInt64($0))) & 0xFF) }
        }
        if masked { bytes += [0x12, 0x34, 0x56, 0x78] }
        return bytes + (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    }

    static let lengths = [0, 1, 125, 126, 127, 300, 65535, 65536, 70000]

    /// Every frame end, found by feeding the frames back to back in pieces of each size: the scanner reports the
    /// first boundary in a piece, the caller starts the rest of the piece from there.
    @Test(arguments: [1, 2, 3, 7, 13, 64, 1000, 100_000])
    func boundariesAreFoundHoweverTheBytesAreSplit(pieceSize: Int) {
        var stream: [UInt8] = []
        var ends: [Int] = []
        for (index, length) in Self.lengths.enumerated() {
            stream += Self.frame(length: length, masked: index % 2 == 0, opcode: index % 3 == 0 ? 0x9 : 0x1)
            ends.append(stream.count)
        }
        var scanner = WebSocketFrameScanner()
        var found: [Int] = []
        var position = 0
        while position < stream.count {
            var piece = Array(stream[position..<min(position + pieceSize, stream.count)])
            var pieceStart = position
            while !piece.isEmpty {
                // Step off a boundary by one byte, as a relay forwarding past it would (one byte never ends a frame:
                // a header has two at least).
                if scanner.isAtBoundary {
                    scanner.advance(over: [piece[0]])
                    piece.removeFirst()
                    pieceStart += 1
                    continue
                }
                guard let boundary = scanner.firstBoundary(in: piece) else { break }
                found.append(pieceStart + boundary)
                piece.removeFirst(boundary)
                pieceStart += boundary
            }
            position += pieceSize
        }
        #expect(found == ends)
        #expect(scanner.isAtBoundary)
    }

    @Test func aChunkInsideAFrameHasNoBoundaryAndOneThatEndsItHasOne() {
        var scanner = WebSocketFrameScanner()
        #expect(scanner.isAtBoundary)
        let atStart = scanner.firstBoundary(in: [0x81])
        #expect(atStart == 0, "at a boundary before any byte")
        scanner.advance(over: [0x81, 0x05, 0x68])  // text frame of 5, 1 payload byte passed
        #expect(!scanner.isAtBoundary)
        let inside = scanner.firstBoundary(in: [0x65, 0x6C])
        #expect(inside == nil)
        let ending = scanner.firstBoundary(in: [0x6C, 0x6F, 0x81, 0x00])
        #expect(ending == 2, "the frame ends after two more bytes")
        #expect(scanner.isAtBoundary)
        scanner.advance(over: Self.frame(length: 126, masked: true) + Self.frame(length: 0, masked: false) + [0x82])
        #expect(!scanner.isAtBoundary, "a header byte of the next frame has passed")
        scanner.advance(over: [0x7F] + [UInt8](repeating: 0, count: 7))
        let lengthOnly = scanner.firstBoundary(in: [0x03])
        #expect(lengthOnly == nil, "64-bit length 3 read; payload to come")
        let payload = scanner.firstBoundary(in: [1, 2, 3, 4])
        #expect(payload == 3)
    }

    @Test func theGoingAwayFramesCarry1001() {
        #expect(WebSocketGoingAway.toClient == [0x88, 12, 0x03, 0xE9] + Array("going away".utf8))
        let key: [UInt8] = [0xA1, 0xB2, 0xC3, 0xD4]
        let masked = WebSocketGoingAway.toUpstream(key: key)
        #expect(Array(masked.prefix(6)) == [0x88, 0x80 | 12] + key)
        let unmasked = masked.dropFirst(6).enumerated().map { $0.element ^ key[$0.offset % 4] }
        #expect(unmasked == WebSocketGoingAway.payload)
        // Each is one whole frame: its header's length is its payload's.
        for frame in [WebSocketGoingAway.toClient, masked] {
            var scanner = WebSocketFrameScanner()
            scanner.advance(over: [frame[0]])
            let whole = scanner.firstBoundary(in: Array(frame.dropFirst()))
            #expect(whole == frame.count - 1)
        }
    }
}
