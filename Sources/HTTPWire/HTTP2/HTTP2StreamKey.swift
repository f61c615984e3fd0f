/// An HTTP/2 stream id as the key of a connection's table of open streams, hashed with one multiplication instead of
/// the standard library's SipHash (about 70 instructions a lookup, several per request).
///
/// `_rawHashValue(seed:)` is the standard library's hook for that (`Int` implements it too). Flooding is no concern:
/// a connection holds at most its `SETTINGS_MAX_CONCURRENT_STREAMS` open streams, and the client's ids only increase.
public struct HTTP2StreamKey: Hashable, Sendable {
    public let id: Int32

    @inlinable public init(_ id: Int32) { self.id = id }

    @inlinable public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// The id times the golden ratio, its high half rotated down: dictionaries take their bucket from the low bits,
    /// which a product alone leaves alike for ids alike in their low bits (every client id is odd).
    @inlinable public func _rawHashValue(seed: Int) -> Int {
        let product = (UInt64(UInt32(bitPattern: id)) ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: product >> 32 | product << 32)
    }
}
