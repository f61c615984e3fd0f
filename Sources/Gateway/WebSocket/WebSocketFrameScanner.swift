/// Follows the frame boundaries of one direction of a WebSocket connection (RFC 6455 §5.2) as its bytes pass, without
/// buffering or decoding them: only each frame's header is read, to learn how much payload follows. A relay that
/// knows where frames end can put a frame of its own between two of them (a Close when the gateway drains) without
/// corrupting either.
struct WebSocketFrameScanner: Sendable {
    /// The bytes of a header read so far (at most 14: two, an extended length of 2 or 8, a masking key of 4).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to pass.
    private var payloadLeft: UInt64 = 0

    /// Whether the bytes so far end exactly at the end of a frame (or nothing has passed yet).
    var isAtBoundary: Bool { header.isEmpty && payloadLeft == 0 }

    /// Passes `bytes` up to the first frame boundary among them and returns the offset just after it (0 when already
    /// at one), or nil, having passed them all, when the current frame goes on past them. The caller stops at that
    /// offset: the bytes after it are not passed.
    mutating func firstBoundary(in bytes: [UInt8]) -> Int? {
        scan(bytes, stoppingAtBoundary: true)
    }

    /// Passes all of `bytes`.
    mutating func advance(over bytes: [UInt8]) {
        _ = scan(bytes, stoppingAtBoundary: false)
    }

    private mutating func scan(_ bytes: [UInt8], stoppingAtBoundary: Bool) -> Int? {
        if stoppingAtBoundary && isAtBoundary { return 0 }
        var offset = 0
        while offset < bytes.count {
            if payloadLeft > 0 {
                let step = Int(min(payloadLeft, UInt64(bytes.count - offset)))
                payloadLeft -= UInt64(step)
                offset += step
            } else {
                header.append(bytes[offset])
                offset += 1
                completeHeaderIfWhole()
            }
            if stoppingAtBoundary && isAtBoundary { return offset }
        }
        return nil
    }

    /// Once the header is whole, takes its payload length and starts on the payload.
    private mutating func completeHeaderIfWhole() {
        guard header.count >= 2 else { return }
        let masked = header[1] & 0x80 != 0
        let shortLength = header[1] & 0x7F
        let lengthBytes = shortLength == 126 ? 2 : shortLength == 127 ? 8 : 0
        let needed = 2 + lengthBytes + (masked ? 4 : 0)
        guard header.count == needed else { return }
        var length = UInt64(shortLength)
        if lengthBytes > 0 {
            length = header[2..<(2 + lengthBytes)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        header.removeAll(keepingCapacity: true)
        payloadLeft = length
    }
}

/// The Close frame (RFC 6455 §5.5.1) the gateway sends both ends of a tunnel when it drains: status 1001 ("going
/// away": the server is going down), unmasked to the client, masked (as a client must) to the upstream.
enum WebSocketGoingAway {
    /// 1001 and a short reason.
    static let payload: [UInt8] = [0x03, 0xE9] + Array("going away".utf8)

    /// The frame for the client (a server's frames are not masked).
    static let toClient: [UInt8] = [0x88, UInt8(payload.count)] + payload

    /// The frame for the upstream, masked with `key` (a client's frames are, RFC 6455 §5.3).
    static func toUpstream(key: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x88, 0x80 | UInt8(payload.count)] + key
        for (index, byte) in payload.enumerated() { frame.append(byte ^ key[index % 4]) }
        return frame
    }
}
