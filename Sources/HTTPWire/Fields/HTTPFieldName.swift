/// A field name the HTTP layers know, found once per field when it is added to an ``HTTPFields`` list (by its
/// length, then its first letter, then its bytes, ignoring ASCII case), so that lookups and filters by these names
/// compare one byte per field instead of the name's bytes. Any other name is ``other``.
///
/// ``isHopByHop`` marks the standard hop-by-hop fields (RFC 9110 §7.6.1, plus `Proxy-Connection` and
/// `HTTP2-Settings`).
public struct HTTPFieldName: RawRepresentable, Hashable, Sendable, BitwiseCopyable {
    public var rawValue: UInt8

    @inlinable
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A name that is not in the table.
    @inlinable public static var other: HTTPFieldName { HTTPFieldName(rawValue: 0) }
    /// `host`
    @inlinable public static var host: HTTPFieldName { HTTPFieldName(rawValue: 1) }
    /// `content-length`
    @inlinable public static var contentLength: HTTPFieldName { HTTPFieldName(rawValue: 2) }
    /// `transfer-encoding`
    @inlinable public static var transferEncoding: HTTPFieldName { HTTPFieldName(rawValue: 3) }
    /// `connection`
    @inlinable public static var connection: HTTPFieldName { HTTPFieldName(rawValue: 4) }
    /// `keep-alive`
    @inlinable public static var keepAlive: HTTPFieldName { HTTPFieldName(rawValue: 5) }
    /// `proxy-connection`
    @inlinable public static var proxyConnection: HTTPFieldName { HTTPFieldName(rawValue: 6) }
    /// `proxy-authenticate`
    @inlinable public static var proxyAuthenticate: HTTPFieldName { HTTPFieldName(rawValue: 7) }
    /// `proxy-authorization`
    @inlinable public static var proxyAuthorization: HTTPFieldName { HTTPFieldName(rawValue: 8) }
    /// `te`
    @inlinable public static var te: HTTPFieldName { HTTPFieldName(rawValue: 9) }
    /// `trailer`
    @inlinable public static var trailer: HTTPFieldName { HTTPFieldName(rawValue: 10) }
    /// `upgrade`
    @inlinable public static var upgrade: HTTPFieldName { HTTPFieldName(rawValue: 11) }
    /// `http2-settings`
    @inlinable public static var http2Settings: HTTPFieldName { HTTPFieldName(rawValue: 12) }
    /// `expect`
    @inlinable public static var expect: HTTPFieldName { HTTPFieldName(rawValue: 13) }
    /// `x-request-id`
    @inlinable public static var xRequestId: HTTPFieldName { HTTPFieldName(rawValue: 14) }
    /// `x-forwarded-for`
    @inlinable public static var xForwardedFor: HTTPFieldName { HTTPFieldName(rawValue: 15) }
    /// `x-forwarded-proto`
    @inlinable public static var xForwardedProto: HTTPFieldName { HTTPFieldName(rawValue: 16) }
    /// `x-forwarded-host`
    @inlinable public static var xForwardedHost: HTTPFieldName { HTTPFieldName(rawValue: 17) }
    /// `x-real-ip`
    @inlinable public static var xRealIp: HTTPFieldName { HTTPFieldName(rawValue: 18) }
    /// `via`
    @inlinable public static var via: HTTPFieldName { HTTPFieldName(rawValue: 19) }
    /// `forwarded`
    @inlinable public static var forwarded: HTTPFieldName { HTTPFieldName(rawValue: 20) }
    /// `authorization`
    @inlinable public static var authorization: HTTPFieldName { HTTPFieldName(rawValue: 21) }
    /// `cookie`
    @inlinable public static var cookie: HTTPFieldName { HTTPFieldName(rawValue: 22) }
    /// `set-cookie`
    @inlinable public static var setCookie: HTTPFieldName { HTTPFieldName(rawValue: 23) }
    /// `content-type`
    @inlinable public static var contentType: HTTPFieldName { HTTPFieldName(rawValue: 24) }
    /// `content-encoding`
    @inlinable public static var contentEncoding: HTTPFieldName { HTTPFieldName(rawValue: 25) }
    /// `accept`
    @inlinable public static var accept: HTTPFieldName { HTTPFieldName(rawValue: 26) }
    /// `accept-encoding`
    @inlinable public static var acceptEncoding: HTTPFieldName { HTTPFieldName(rawValue: 27) }
    /// `accept-language`
    @inlinable public static var acceptLanguage: HTTPFieldName { HTTPFieldName(rawValue: 28) }
    /// `user-agent`
    @inlinable public static var userAgent: HTTPFieldName { HTTPFieldName(rawValue: 29) }
    /// `date`
    @inlinable public static var date: HTTPFieldName { HTTPFieldName(rawValue: 30) }
    /// `server`
    @inlinable public static var server: HTTPFieldName { HTTPFieldName(rawValue: 31) }
    /// `cache-control`
    @inlinable public static var cacheControl: HTTPFieldName { HTTPFieldName(rawValue: 32) }
    /// `vary`
    @inlinable public static var vary: HTTPFieldName { HTTPFieldName(rawValue: 33) }
    /// `location`
    @inlinable public static var location: HTTPFieldName { HTTPFieldName(rawValue: 34) }
    /// `traceparent`
    @inlinable public static var traceparent: HTTPFieldName { HTTPFieldName(rawValue: 35) }
    /// `tracestate`
    @inlinable public static var tracestate: HTTPFieldName { HTTPFieldName(rawValue: 36) }
    /// `referer`
    @inlinable public static var referer: HTTPFieldName { HTTPFieldName(rawValue: 37) }
    /// `origin`
    @inlinable public static var origin: HTTPFieldName { HTTPFieldName(rawValue: 38) }
    /// `etag`
    @inlinable public static var etag: HTTPFieldName { HTTPFieldName(rawValue: 39) }
    /// `last-modified`
    @inlinable public static var lastModified: HTTPFieldName { HTTPFieldName(rawValue: 40) }
    /// `if-none-match`
    @inlinable public static var ifNoneMatch: HTTPFieldName { HTTPFieldName(rawValue: 41) }
    /// `if-modified-since`
    @inlinable public static var ifModifiedSince: HTTPFieldName { HTTPFieldName(rawValue: 42) }
    /// `range`
    @inlinable public static var range: HTTPFieldName { HTTPFieldName(rawValue: 43) }
    /// `content-range`
    @inlinable public static var contentRange: HTTPFieldName { HTTPFieldName(rawValue: 44) }
    /// `age`
    @inlinable public static var age: HTTPFieldName { HTTPFieldName(rawValue: 45) }
    /// `expires`
    @inlinable public static var expires: HTTPFieldName { HTTPFieldName(rawValue: 46) }
    /// `pragma`
    @inlinable public static var pragma: HTTPFieldName { HTTPFieldName(rawValue: 47) }
    /// `retry-after`
    @inlinable public static var retryAfter: HTTPFieldName { HTTPFieldName(rawValue: 48) }
    /// `www-authenticate`
    @inlinable public static var wwwAuthenticate: HTTPFieldName { HTTPFieldName(rawValue: 49) }
    /// `sec-websocket-key`
    @inlinable public static var secWebSocketKey: HTTPFieldName { HTTPFieldName(rawValue: 50) }
    /// `sec-websocket-accept`
    @inlinable public static var secWebSocketAccept: HTTPFieldName { HTTPFieldName(rawValue: 51) }
    /// `sec-websocket-version`
    @inlinable public static var secWebSocketVersion: HTTPFieldName { HTTPFieldName(rawValue: 52) }
    /// `sec-websocket-protocol`
    @inlinable public static var secWebSocketProtocol: HTTPFieldName { HTTPFieldName(rawValue: 53) }
    /// `sec-websocket-extensions`
    @inlinable public static var secWebSocketExtensions: HTTPFieldName { HTTPFieldName(rawValue: 54) }
    /// `x-api-key`
    @inlinable public static var xApiKey: HTTPFieldName { HTTPFieldName(rawValue: 55) }
    /// `alt-svc`
    @inlinable public static var altSvc: HTTPFieldName { HTTPFieldName(rawValue: 56) }
    /// `strict-transport-security`
    @inlinable public static var strictTransportSecurity: HTTPFieldName { HTTPFieldName(rawValue: 57) }
    /// `access-control-allow-origin`
    @inlinable public static var accessControlAllowOrigin: HTTPFieldName { HTTPFieldName(rawValue: 58) }

    /// Whether the field describes one connection and is never forwarded.
    @inlinable
    public var isHopByHop: Bool {
        switch rawValue {
        case 3, 4, 5, 6, 7, 8, 9, 10, 11, 12: return true
        default: return false
        }
    }

    /// The lower-case spelling of every name in the table, by raw value (index 0 is ``other``'s, empty).
    static let spellings: [String] = [
        "",
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "upgrade",
        "http2-settings",
        "expect",
        "x-request-id",
        "x-forwarded-for",
        "x-forwarded-proto",
        "x-forwarded-host",
        "x-real-ip",
        "via",
        "forwarded",
        "authorization",
        "cookie",
        "set-cookie",
        "content-type",
        "content-encoding",
        "accept",
        "accept-encoding",
        "accept-language",
        "user-agent",
        "date",
        "server",
        "cache-control",
        "vary",
        "location",
        "traceparent",
        "tracestate",
        "referer",
        "origin",
        "etag",
        "last-modified",
        "if-none-match",
        "if-modified-since",
        "range",
        "content-range",
        "age",
        "expires",
        "pragma",
        "retry-after",
        "www-authenticate",
        "sec-websocket-key",
        "sec-websocket-accept",
        "sec-websocket-version",
        "sec-websocket-protocol",
        "sec-websocket-extensions",
        "x-api-key",
        "alt-svc",
        "strict-transport-security",
        "access-control-allow-origin"
    ]

    /// The token of `name` (any case), or ``other``.
    package init(_ name: String) {
        self = HTTPFields.withBytes(of: name) { HTTPFieldName.lookup($0) }
    }

    /// The token of the name in `bytes` (any case), or ``other``.
    package init(bytes: UnsafeRawBufferPointer) {
        self = HTTPFieldName.lookup(bytes)
    }
}
