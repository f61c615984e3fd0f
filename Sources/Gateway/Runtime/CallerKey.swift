/// The fair share's key for a caller (see ``GatewayHandler/Call/callerKey(for:)``): its identity's bytes mixed into
/// one word, with a seed drawn once per process. `Hasher` took ~330 instructions per request for a short address
/// (its seeding, a string's normalization check, SipHash's rounds); this reads the bytes in place, eight at a time,
/// and multiplies (as wyhash mixes). The key only groups a pool's connections by caller: two callers that came out
/// alike would share one fair share, and with the process's random seed nobody can aim at that.
enum CallerKey {
    /// Drawn once per process, so that keys are not predictable from outside.
    private static let seed = UInt64.random(in: .min ... .max)

    /// The key for `identity` of kind `kind` (an API client's name and an address never collide by value alone).
    static func of(_ identity: String, kind: UInt64) -> Int {
        var identity = identity
        return identity.withUTF8 { bytes in
            Int(truncatingIfNeeded: mix(UnsafeRawBufferPointer(bytes), seed: seed ^ (kind &* 0x9E37_79B9_7F4A_7C15)))
        }
    }

    /// `bytes` mixed with `seed`.
    static func mix(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var state = seed ^ UInt64(truncatingIfNeeded: bytes.count)
        var offset = 0
        while offset &+ 8 <= bytes.count {
            state = fold(state ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self), 0xA076_1D64_78BD_642F)
            offset &+= 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) &<< shift
            shift &+= 8
            offset &+= 1
        }
        state = fold(state ^ tail, 0xE703_7ED1_A0B4_28DB)
        return fold(state, 0x8EBC_6AF0_9C88_C6E3)
    }

    /// The high and low words of `a * b` (128 bits), xored.
    @inline(__always)
    private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (high, low) = a.multipliedFullWidth(by: b)
        return high ^ low
    }
}
