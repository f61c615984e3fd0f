#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call and the `errno` it left.
package struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    package var call: String
    package var errno: Int32

    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// Captures the current `errno` for `call`.
    package static func last(_ call: String) -> SystemError {
        SystemError(call, errno: Glibc.errno)
    }

    package var description: String {
        "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
