/// An HTTP protocol version such as 1.1.
package struct HTTPVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var major: Int
    package var minor: Int

    @inlinable
    package init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    // Computed and inlinable (two constants), not stored globals read through an accessor that checks they are set.
    @inlinable package static var http1_0: HTTPVersion { HTTPVersion(major: 1, minor: 0) }
    @inlinable package static var http1_1: HTTPVersion { HTTPVersion(major: 1, minor: 1) }
    @inlinable package static var http2: HTTPVersion { HTTPVersion(major: 2, minor: 0) }

    @inlinable
    package static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    // The comparisons are written out and inlinable, so a comparison in another module is a few instructions rather
    // than a call through the protocol's witness (`>=` and `==` otherwise come from `Comparable` and `Equatable`).
    @inlinable
    package static func == (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        lhs.major == rhs.major && lhs.minor == rhs.minor
    }

    @inlinable
    package static func >= (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { !(lhs < rhs) }

    @inlinable
    package static func > (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { rhs < lhs }

    @inlinable
    package static func <= (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { !(rhs < lhs) }

    /// `HTTP/1.1` form as written on the wire.
    package var description: String { "HTTP/\(major).\(minor)" }
}
