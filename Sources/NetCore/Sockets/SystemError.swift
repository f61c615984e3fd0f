#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call and the `errno` it left.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// Captures the current `errno` for `call`.
    public static func last(_ call: String) -> SystemError {
        SystemError(call, errno: Glibc.errno)
    }

    public var description: String {
        "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
