/// An HTTP protocol version such as 1.1.
public struct HTTPVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    @inlinable
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    // Computed and inlinable (two constants), not stored globals read through an accessor that checks they are set.
    @inlinable public static var http1_0: HTTPVersion { HTTPVersion(major: 1, minor: 0) }
    @inlinable public static var http1_1: HTTPVersion { HTTPVersion(major: 1, minor: 1) }
    @inlinable public static var http2: HTTPVersion { HTTPVersion(major: 2, minor: 0) }

    @inlinable
    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    // The comparisons are written out and inlinable, so a comparison in another module is a few instructions rather
    // than a call through the protocol's witness (`>=` and `==` otherwise come from `Comparable` and `Equatable`).
    @inlinable
    public static func == (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        lhs.major == rhs.major && lhs.minor == rhs.minor
    }

    @inlinable
    public static func >= (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { !(lhs < rhs) }

    @inlinable
    public static func > (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { rhs < lhs }

    @inlinable
    public static func <= (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool { !(rhs < lhs) }

    /// `HTTP/1.1` form as written on the wire.
    public var description: String { "HTTP/\(major).\(minor)" }
}
