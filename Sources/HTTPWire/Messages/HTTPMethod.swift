/// An HTTP request method. Methods are case-sensitive tokens: `get` is not `GET`.
public struct HTTPMethod: Sendable, Hashable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public static let get: HTTPMethod = "GET"
    public static let head: HTTPMethod = "HEAD"
    public static let post: HTTPMethod = "POST"
    public static let put: HTTPMethod = "PUT"
    public static let patch: HTTPMethod = "PATCH"
    public static let delete: HTTPMethod = "DELETE"
    public static let options: HTTPMethod = "OPTIONS"
    public static let trace: HTTPMethod = "TRACE"
    public static let connect: HTTPMethod = "CONNECT"
    public static let query: HTTPMethod = "QUERY"

    /// Whether repeating the request is safe by definition (RFC 9110 §9.2.2), so a client may retry it.
    public var isIdempotent: Bool {
        switch self {
        case .get, .head, .put, .delete, .options, .trace: return true
        default: return false
        }
    }

    /// Whether the method is safe (RFC 9110 §9.2.1: GET, HEAD, OPTIONS, TRACE): it asks for nothing to change on the
    /// server, so pipelined safe requests may be handled in parallel, and no others (RFC 9112 §9.3.2).
    public var isSafe: Bool {
        switch self {
        case .get, .head, .options, .trace: return true
        default: return false
        }
    }

    public var description: String { rawValue }
}
