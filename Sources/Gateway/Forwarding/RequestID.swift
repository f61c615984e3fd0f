import Locking

/// Makes request ids: the client's `X-Request-Id` when it is a short safe token, else a new random id of 15 URL-safe
/// characters (90 random bits).
///
/// Fifteen bytes is the most Swift keeps inline in a `String`: the id, copied into the access record, the forwarded
/// and returned headers and error bodies, costs no allocation and no reference counting.
enum RequestID {
    static func take(from value: String?, generator: RequestIDGenerator) -> String {
        if let value, !value.isEmpty, value.utf8.count <= 128,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        {
            return value
        }
        return generate(generator.next())
    }

    /// The length of a generated id.
    static let length = 15

    /// An id from 90 of `bits`' 128 bits, six per character: the high 48 of the first word, then the high 42 of the
    /// second.
    static func generate(_ bits: (UInt64, UInt64)) -> String {
        let alphabet: StaticString = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
        let table = alphabet.utf8Start
        // Each word's characters packed into a word of their own, little-endian (the first character in the low
        // byte): eight from the first, seven from the second.
        var first: UInt64 = 0
        var second: UInt64 = 0
        for index in 0..<8 {
            let shift = UInt64(58 - 6 * index)
            first |= UInt64(table[Int(truncatingIfNeeded: (bits.0 >> shift) & 0x3f)]) << UInt64(8 * index)
            if index < 7 {
                second |= UInt64(table[Int(truncatingIfNeeded: (bits.1 >> shift) & 0x3f)]) << UInt64(8 * index)
            }
        }
        // Written straight into the inline string: at most fifteen ASCII bytes make a small string with no UTF-8
        // validation (`String(decoding:as:)` validated the bytes first).
        return String(unsafeUninitializedCapacity: length) { buffer in
            withUnsafeBytes(of: (first.littleEndian, second.littleEndian)) { characters in
                UnsafeMutableRawBufferPointer(buffer).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: characters[..<length]))
            }
            return length
        }
    }
}

/// 128 random bits per request id from a xoshiro256** generator seeded once from the system's random source
/// (`SystemRandomNumberGenerator` costs a `getrandom` call per draw). Ids must be unique, not secret.
final class RequestIDGenerator: Sendable {
    private let state: Locked<(UInt64, UInt64, UInt64, UInt64)>

    init() {
        var system = SystemRandomNumberGenerator()
        state = Locked((system.next() | 1, system.next(), system.next(), system.next()))
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
