/// An HTTP protocol version such as 1.1.
package struct HTTPVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var major: Int
    package var minor: Int

    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    package static let http1_0 = HTTPVersion(major: 1, minor: 0)
    package static let http1_1 = HTTPVersion(major: 1, minor: 1)
    package static let http2 = HTTPVersion(major: 2, minor: 0)

    package static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    /// `HTTP/1.1` form as written on the wire.
    package var description: String { "HTTP/\(major).\(minor)" }
}
