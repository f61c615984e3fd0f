/// A secret string from the configuration (token, password, API key). Its description never shows the value, so
/// printing or logging a config value cannot leak it.
package struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The secret itself. Use it only to put it on the wire.
    package let value: String

    package init(_ value: String) { self.value = value }

    package var description: String { "[REDACTED]" }
    package var debugDescription: String { "Secret([REDACTED])" }
}
