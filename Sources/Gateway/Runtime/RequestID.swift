import Synchronization

/// Makes request ids: the client's `X-Request-Id` when it is a short safe token, else a new random 128-bit hex id.
enum RequestID {
    static func take(from value: String?) -> String {
        if let value, !value.isEmpty, value.utf8.count <= 128,
           value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            return value
        }
        return generate()
    }

    static func generate() -> String {
        let high = UInt64.random(in: 0...UInt64.max)
        let low = UInt64.random(in: 0...UInt64.max)
        return String(unsafeUninitializedCapacity: 32) { buffer in
            hex(high, into: buffer, at: 0)
            hex(low, into: buffer, at: 16)
            return 32
        }
    }

    /// Sixteen lower-case hex digits of `value`, zero-padded.
    private static func hex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        let digits: StaticString = "0123456789abcdef"
        for index in 0..<16 {
            let nibble = Int((value >> UInt64(60 - 4 * index)) & 0xf)
            buffer[offset + index] = digits.utf8Start[nibble]
        }
    }
}

/// Counts the callers of each coalescing key in flight, so the access log can tell the leader from followers.
final class FlightTracker: Sendable {
    private let counts = Mutex<[CoalescingKey: Int]>([:])

    /// Joins the flight for `key`; true for the first caller (the leader).
    func join(_ key: CoalescingKey) -> Bool {
        counts.withLock { counts in
            let previous = counts[key, default: 0]
            counts[key] = previous + 1
            return previous == 0
        }
    }

    func leave(_ key: CoalescingKey) {
        counts.withLock { counts in
            let remaining = counts[key, default: 1] - 1
            counts[key] = remaining > 0 ? remaining : nil
        }
    }
}
