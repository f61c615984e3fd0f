#if canImport(Glibc)
import Glibc
#endif

/// The last few field names and values too long for Swift's small-string form (more than 15 bytes), kept by a
/// connection's parser and handed out again when the same bytes come in a later message: a `Date` in the same second,
/// a `Content-Type: application/json`, a client's `User-Agent`. Each reuse saves an allocation and a copy per message.
/// Bytes are compared exactly, so a reused string is the one decoding those bytes would make.
struct HTTP1FieldInterner: Sendable {
    private var recent: [String] = []
    private var nextSlot = 0
    /// How many strings are kept (per connection, so it stays small).
    static let capacity = 4

    init() {}

    /// The string for `bytes`: a kept one with the same bytes, else a new one (kept in place of the oldest).
    mutating func string(_ bytes: UnsafeRawBufferPointer) -> String {
        guard bytes.count > 15 else { return HTTP1Grammar.string(bytes) }
        for index in recent.indices where Self.matches(&recent[index], bytes) { return recent[index] }
        let made = HTTP1Grammar.string(bytes)
        if recent.count < Self.capacity {
            if recent.isEmpty { recent.reserveCapacity(Self.capacity) }
            recent.append(made)
        } else {
            recent[nextSlot] = made
            nextSlot = (nextSlot + 1) % Self.capacity
        }
        return made
    }

    private static func matches(_ candidate: inout String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard candidate.utf8.count == bytes.count else { return false }
        return candidate.withUTF8 { stored in
            guard let storedBase = stored.baseAddress, let base = bytes.baseAddress else { return stored.isEmpty }
            return memcmp(storedBase, base, bytes.count) == 0
        }
    }
}
