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
        return hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
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
