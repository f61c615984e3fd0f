/// A set of ``HTTPFieldName`` tokens as one bit each: whether a field is in it costs one shift and one mask, whatever
/// the name's length. Only names in the table can be members (``HTTPFieldName/other`` never is).
public struct HTTPFieldNameSet: Sendable, BitwiseCopyable {
    @usableFromInline let bits: UInt64

    /// The set of `names`.
    package init(_ names: [HTTPFieldName]) {
        var bits: UInt64 = 0
        for name in names where name != .other && name.rawValue < 64 { bits |= 1 << UInt64(name.rawValue) }
        self.bits = bits
    }

    /// Whether `name` is in the set.
    @inlinable
    public func contains(_ name: HTTPFieldName) -> Bool {
        name.rawValue < 64 && bits & (1 << UInt64(name.rawValue)) != 0
    }
}
