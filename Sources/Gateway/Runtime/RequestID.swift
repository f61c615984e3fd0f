import Synchronization

/// Makes request ids: the client's `X-Request-Id` when it is a short safe token, else a new random 128-bit hex id.
enum RequestID {
    static func take(from value: String?, generator: RequestIDGenerator) -> String {
        if let value, !value.isEmpty, value.utf8.count <= 128,
           value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            return value
        }
        return generate(generator.next())
    }

    static func generate(_ bits: (UInt64, UInt64)) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            hex(bits.0, into: buffer, at: 0)
            hex(bits.1, into: buffer, at: 16)
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

/// 128 random bits per request id from a xoshiro256** generator seeded once from the system's random source
/// (`SystemRandomNumberGenerator` costs a `getrandom` call per draw). Ids must be unique, not secret.
final class RequestIDGenerator: Sendable {
    private let state: Mutex<(UInt64, UInt64, UInt64, UInt64)>

    init() {
        var system = SystemRandomNumberGenerator()
        state = Mutex((system.next() | 1, system.next(), system.next(), system.next()))
    }

    func next() -> (UInt64, UInt64) {
        state.withLock { s in (Self.step(&s), Self.step(&s)) }
    }

    private static func step(_ s: inout (UInt64, UInt64, UInt64, UInt64)) -> UInt64 {
        let result = rotate(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotate(s.3, 45)
        return result
    }

    private static func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}
