/// Why a message head could not be serialized: a part of it would break HTTP/1 framing (for example a header
/// value containing CR or LF, which would inject header lines).
public struct HTTP1SerializationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
