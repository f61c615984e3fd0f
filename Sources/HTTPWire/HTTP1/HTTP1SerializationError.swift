/// Why a message head could not be serialized: a part of it would break HTTP/1 framing (for example a header
/// value containing CR or LF, which would inject header lines).
package struct HTTP1SerializationError: Error, Sendable, Hashable, CustomStringConvertible {
    package var reason: String

    package init(reason: String) {
        self.reason = reason
    }

    package var description: String { reason }
}
