/// An HTTP protocol version such as 1.1.
public struct HTTPVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    public static func < (lhs: HTTPVersion, rhs: HTTPVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    /// `HTTP/1.1` form as written on the wire.
    public var description: String { "HTTP/\(major).\(minor)" }
}
