/// A field name the HTTP layers know, found once per field when it is added to an ``HTTPFields`` list (by its
/// length, then its first letter, then its bytes, ignoring ASCII case), so that lookups and filters by these names
/// compare one byte per field instead of the name's bytes. Any other name is ``other``.
///
/// ``isHopByHop`` marks the standard hop-by-hop fields (RFC 9110 §7.6.1, plus `Proxy-Connection` and
/// `HTTP2-Settings`).
@usableFromInline
package struct HTTPFieldName: RawRepresentable, Hashable, Sendable, BitwiseCopyable {
    @usableFromInline package var rawValue: UInt8

    @inlinable
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A name that is not in the table.
    @inlinable package static var other: HTTPFieldName { HTTPFieldName(rawValue: 0) }
    /// `host`
    @inlinable package static var host: HTTPFieldName { HTTPFieldName(rawValue: 1) }
    /// `content-length`
    @inlinable package static var contentLength: HTTPFieldName { HTTPFieldName(rawValue: 2) }
    /// `transfer-encoding`
    @inlinable package static var transferEncoding: HTTPFieldName { HTTPFieldName(rawValue: 3) }
    /// `connection`
    @inlinable package static var connection: HTTPFieldName { HTTPFieldName(rawValue: 4) }
    /// `keep-alive`
    @inlinable package static var keepAlive: HTTPFieldName { HTTPFieldName(rawValue: 5) }
    /// `proxy-connection`
    @inlinable package static var proxyConnection: HTTPFieldName { HTTPFieldName(rawValue: 6) }
    /// `proxy-authenticate`
    @inlinable package static var proxyAuthenticate: HTTPFieldName { HTTPFieldName(rawValue: 7) }
    /// `proxy-authorization`
    @inlinable package static var proxyAuthorization: HTTPFieldName { HTTPFieldName(rawValue: 8) }
    /// `te`
    @inlinable package static var te: HTTPFieldName { HTTPFieldName(rawValue: 9) }
    /// `trailer`
    @inlinable package static var trailer: HTTPFieldName { HTTPFieldName(rawValue: 10) }
    /// `upgrade`
    @inlinable package static var upgrade: HTTPFieldName { HTTPFieldName(rawValue: 11) }
    /// `http2-settings`
    @inlinable package static var http2Settings: HTTPFieldName { HTTPFieldName(rawValue: 12) }
    /// `expect`
    @inlinable package static var expect: HTTPFieldName { HTTPFieldName(rawValue: 13) }
    /// `x-request-id`
    @inlinable package static var xRequestId: HTTPFieldName { HTTPFieldName(rawValue: 14) }
    /// `x-forwarded-for`
    @inlinable package static var xForwardedFor: HTTPFieldName { HTTPFieldName(rawValue: 15) }
    /// `x-forwarded-proto`
    @inlinable package static var xForwardedProto: HTTPFieldName { HTTPFieldName(rawValue: 16) }
    /// `x-forwarded-host`
    @inlinable package static var xForwardedHost: HTTPFieldName { HTTPFieldName(rawValue: 17) }
    /// `x-real-ip`
    @inlinable package static var xRealIp: HTTPFieldName { HTTPFieldName(rawValue: 18) }
    /// `via`
    @inlinable package static var via: HTTPFieldName { HTTPFieldName(rawValue: 19) }
    /// `forwarded`
    @inlinable package static var forwarded: HTTPFieldName { HTTPFieldName(rawValue: 20) }
    /// `authorization`
    @inlinable package static var authorization: HTTPFieldName { HTTPFieldName(rawValue: 21) }
    /// `cookie`
    @inlinable package static var cookie: HTTPFieldName { HTTPFieldName(rawValue: 22) }
    /// `set-cookie`
    @inlinable package static var setCookie: HTTPFieldName { HTTPFieldName(rawValue: 23) }
    /// `content-type`
    @inlinable package static var contentType: HTTPFieldName { HTTPFieldName(rawValue: 24) }
    /// `content-encoding`
    @inlinable package static var contentEncoding: HTTPFieldName { HTTPFieldName(rawValue: 25) }
    /// `accept`
    @inlinable package static var accept: HTTPFieldName { HTTPFieldName(rawValue: 26) }
    /// `accept-encoding`
    @inlinable package static var acceptEncoding: HTTPFieldName { HTTPFieldName(rawValue: 27) }
    /// `accept-language`
    @inlinable package static var acceptLanguage: HTTPFieldName { HTTPFieldName(rawValue: 28) }
    /// `user-agent`
    @inlinable package static var userAgent: HTTPFieldName { HTTPFieldName(rawValue: 29) }
    /// `date`
    @inlinable package static var date: HTTPFieldName { HTTPFieldName(rawValue: 30) }
    /// `server`
    @inlinable package static var server: HTTPFieldName { HTTPFieldName(rawValue: 31) }
    /// `cache-control`
    @inlinable package static var cacheControl: HTTPFieldName { HTTPFieldName(rawValue: 32) }
    /// `vary`
    @inlinable package static var vary: HTTPFieldName { HTTPFieldName(rawValue: 33) }
    /// `location`
    @inlinable package static var location: HTTPFieldName { HTTPFieldName(rawValue: 34) }
    /// `traceparent`
    @inlinable package static var traceparent: HTTPFieldName { HTTPFieldName(rawValue: 35) }
    /// `tracestate`
    @inlinable package static var tracestate: HTTPFieldName { HTTPFieldName(rawValue: 36) }
    /// `referer`
    @inlinable package static var referer: HTTPFieldName { HTTPFieldName(rawValue: 37) }
    /// `origin`
    @inlinable package static var origin: HTTPFieldName { HTTPFieldName(rawValue: 38) }
    /// `etag`
    @inlinable package static var etag: HTTPFieldName { HTTPFieldName(rawValue: 39) }
    /// `last-modified`
    @inlinable package static var lastModified: HTTPFieldName { HTTPFieldName(rawValue: 40) }
    /// `if-none-match`
    @inlinable package static var ifNoneMatch: HTTPFieldName { HTTPFieldName(rawValue: 41) }
    /// `if-modified-since`
    @inlinable package static var ifModifiedSince: HTTPFieldName { HTTPFieldName(rawValue: 42) }
    /// `range`
    @inlinable package static var range: HTTPFieldName { HTTPFieldName(rawValue: 43) }
    /// `content-range`
    @inlinable package static var contentRange: HTTPFieldName { HTTPFieldName(rawValue: 44) }
    /// `age`
    @inlinable package static var age: HTTPFieldName { HTTPFieldName(rawValue: 45) }
    /// `expires`
    @inlinable package static var expires: HTTPFieldName { HTTPFieldName(rawValue: 46) }
    /// `pragma`
    @inlinable package static var pragma: HTTPFieldName { HTTPFieldName(rawValue: 47) }
    /// `retry-after`
    @inlinable package static var retryAfter: HTTPFieldName { HTTPFieldName(rawValue: 48) }
    /// `www-authenticate`
    @inlinable package static var wwwAuthenticate: HTTPFieldName { HTTPFieldName(rawValue: 49) }
    /// `sec-websocket-key`
    @inlinable package static var secWebSocketKey: HTTPFieldName { HTTPFieldName(rawValue: 50) }
    /// `sec-websocket-accept`
    @inlinable package static var secWebSocketAccept: HTTPFieldName { HTTPFieldName(rawValue: 51) }
    /// `sec-websocket-version`
    @inlinable package static var secWebSocketVersion: HTTPFieldName { HTTPFieldName(rawValue: 52) }
    /// `sec-websocket-protocol`
    @inlinable package static var secWebSocketProtocol: HTTPFieldName { HTTPFieldName(rawValue: 53) }
    /// `sec-websocket-extensions`
    @inlinable package static var secWebSocketExtensions: HTTPFieldName { HTTPFieldName(rawValue: 54) }
    /// `x-api-key`
    @inlinable package static var xApiKey: HTTPFieldName { HTTPFieldName(rawValue: 55) }
    /// `alt-svc`
    @inlinable package static var altSvc: HTTPFieldName { HTTPFieldName(rawValue: 56) }
    /// `strict-transport-security`
    @inlinable package static var strictTransportSecurity: HTTPFieldName { HTTPFieldName(rawValue: 57) }
    /// `access-control-allow-origin`
    @inlinable package static var accessControlAllowOrigin: HTTPFieldName { HTTPFieldName(rawValue: 58) }

    /// Whether the field describes one connection and is never forwarded.
    @inlinable
    package var isHopByHop: Bool {
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
        "access-control-allow-origin",
    ]

    /// The token of `name` (any case), or ``other``.
    package init(_ name: String) {
        self = HTTPFields.withBytes(of: name) { HTTPFieldName.lookup($0) }
    }

    /// The token of the name in `bytes` (any case), or ``other``.
    package init(bytes: UnsafeRawBufferPointer) {
        self = HTTPFieldName.lookup(bytes)
    }

    /// The known name `bytes` spell, ignoring ASCII case: the name's length picks the candidates, and each is
    /// compared a word at a time (a letter's case bit masked, every other byte exact).
    static func lookup(_ bytes: UnsafeRawBufferPointer) -> HTTPFieldName {
        guard let base = bytes.baseAddress else { return .other }
        switch bytes.count {
        case 2:
            let w0 = UInt64(base.loadUnaligned(as: UInt16.self)) | UInt64(base.loadUnaligned(fromByteOffset: 0, as: UInt16.self)) << 16
            if w0 | 0x20202020 == 0x65746574 { return .te }  // te
        case 3:
            let w0 = UInt64(base.loadUnaligned(as: UInt16.self)) | UInt64(base.loadUnaligned(fromByteOffset: 1, as: UInt16.self)) << 16
            if w0 | 0x20202020 == 0x61696976 { return .via }  // via
            if w0 | 0x20202020 == 0x65676761 { return .age }  // age
        case 4:
            let w0 = UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(base.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) << 32
            if w0 | 0x2020202020202020 == 0x74736f6874736f68 { return .host }  // host
            if w0 | 0x2020202020202020 == 0x6574616465746164 { return .date }  // date
            if w0 | 0x2020202020202020 == 0x7972617679726176 { return .vary }  // vary
            if w0 | 0x2020202020202020 == 0x6761746567617465 { return .etag }  // etag
        case 5:
            let w0 = UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(base.loadUnaligned(fromByteOffset: 1, as: UInt32.self)) << 32
            if w0 | 0x2020202020202020 == 0x65676e61676e6172 { return .range }  // range
        case 6:
            let w0 = UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(base.loadUnaligned(fromByteOffset: 2, as: UInt32.self)) << 32
            if w0 | 0x2020202020202020 == 0x7463657065707865 { return .expect }  // expect
            if w0 | 0x2020202020202020 == 0x65696b6f6b6f6f63 { return .cookie }  // cookie
            if w0 | 0x2020202020202020 == 0x7470656365636361 { return .accept }  // accept
            if w0 | 0x2020202020202020 == 0x7265767276726573 { return .server }  // server
            if w0 | 0x2020202020202020 == 0x6e6967696769726f { return .origin }  // origin
            if w0 | 0x2020202020202020 == 0x616d676167617270 { return .pragma }  // pragma
        case 7:
            let w0 = UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(base.loadUnaligned(fromByteOffset: 3, as: UInt32.self)) << 32
            if w0 | 0x2020202020202020 == 0x72656c6969617274 { return .trailer }  // trailer
            if w0 | 0x2020202020202020 == 0x6564617272677075 { return .upgrade }  // upgrade
            if w0 | 0x2020202020202020 == 0x7265726565666572 { return .referer }  // referer
            if w0 | 0x2020202020202020 == 0x7365726969707865 { return .expires }  // expires
            if w0 | 0x2020200000202020 == 0x6376732d2d746c61 { return .altSvc }  // alt-svc
        case 8:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            if w0 | 0x2020202020202020 == 0x6e6f697461636f6c { return .location }  // location
        case 9:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 1, as: UInt64.self)
            if w0 | 0x2000202020200020 == 0x692d6c6165722d78 && w1 | 0x2020002020202000 == 0x70692d6c6165722d { return .xRealIp }  // x-real-ip
            if w0 | 0x2020202020202020 == 0x6564726177726f66 && w1 | 0x2020202020202020 == 0x646564726177726f { return .forwarded }  // forwarded
            if w0 | 0x2020002020200020 == 0x656b2d6970612d78 && w1 | 0x2020200020202000 == 0x79656b2d6970612d { return .xApiKey }  // x-api-key
        case 10:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 2, as: UInt64.self)
            if w0 | 0x2020202020202020 == 0x697463656e6e6f63 && w1 | 0x2020202020202020 == 0x6e6f697463656e6e { return .connection }  // connection
            if w0 | 0x2020200020202020 == 0x696c612d7065656b && w1 | 0x2020202020002020 == 0x6576696c612d7065 { return .keepAlive }  // keep-alive
            if w0 | 0x2020202000202020 == 0x6b6f6f632d746573 && w1 | 0x2020202020200020 == 0x65696b6f6f632d74 { return .setCookie }  // set-cookie
            if w0 | 0x2020200020202020 == 0x6567612d72657375 && w1 | 0x2020202020002020 == 0x746e6567612d7265 { return .userAgent }  // user-agent
            if w0 | 0x2020202020202020 == 0x6174736563617274 && w1 | 0x2020202020202020 == 0x6574617473656361 { return .tracestate }  // tracestate
        case 11:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 3, as: UInt64.self)
            if w0 | 0x2020202020202020 == 0x7261706563617274 && w1 | 0x2020202020202020 == 0x746e657261706563 { return .traceparent }  // traceparent
            if w0 | 0x2020002020202020 == 0x66612d7972746572 && w1 | 0x2020202020002020 == 0x72657466612d7972 { return .retryAfter }  // retry-after
        case 12:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 4, as: UInt64.self)
            if w0 | 0x2020202020200020 == 0x7365757165722d78 && w1 | 0x2020002020202020 == 0x64692d7473657571 { return .xRequestId }  // x-request-id
            if w0 | 0x20202020202020 == 0x2d746e65746e6f63 && w1 | 0x2020202000202020 == 0x657079742d746e65 { return .contentType }  // content-type
        case 13:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 5, as: UInt64.self)
            if w0 | 0x2020202020202020 == 0x7a69726f68747561 && w1 | 0x2020202020202020 == 0x6e6f6974617a6972 { return .authorization }  // authorization
            if w0 | 0x2020002020202020 == 0x6f632d6568636163 && w1 | 0x2020202020202000 == 0x6c6f72746e6f632d { return .cacheControl }  // cache-control
            if w0 | 0x2020200020202020 == 0x646f6d2d7473616c && w1 | 0x2020202020202020 == 0x6465696669646f6d { return .lastModified }  // last-modified
            if w0 | 0x20202020002020 == 0x2d656e6f6e2d6669 && w1 | 0x2020202020002020 == 0x686374616d2d656e { return .ifNoneMatch }  // if-none-match
            if w0 | 0x20202020202020 == 0x2d746e65746e6f63 && w1 | 0x2020202020002020 == 0x65676e61722d746e { return .contentRange }  // content-range
        case 14:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 6, as: UInt64.self)
            if w0 | 0x20202020202020 == 0x2d746e65746e6f63 && w1 | 0x2020202020200020 == 0x6874676e656c2d74 { return .contentLength }  // content-length
            if w0 | 0x2020000020202020 == 0x65732d3270747468 && w1 | 0x2020202020202020 == 0x73676e6974746573 { return .http2Settings }  // http2-settings
        case 15:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 7, as: UInt64.self)
            if w0 | 0x2020202020200020 == 0x726177726f662d78 && w1 | 0x2020200020202020 == 0x726f662d64656472 { return .xForwardedFor }  // x-forwarded-for
            if w0 | 0x2000202020202020 == 0x652d747065636361 && w1 | 0x2020202020202020 == 0x676e69646f636e65 { return .acceptEncoding }  // accept-encoding
            if w0 | 0x2000202020202020 == 0x6c2d747065636361 && w1 | 0x2020202020202020 == 0x65676175676e616c { return .acceptLanguage }  // accept-language
        case 16:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            if w0 | 0x2020002020202020 == 0x6f632d79786f7270 && w1 | 0x2020202020202020 == 0x6e6f697463656e6e { return .proxyConnection }  // proxy-connection
            if w0 | 0x2020202020200020 == 0x726177726f662d78 && w1 | 0x2020202000202020 == 0x74736f682d646564 { return .xForwardedHost }  // x-forwarded-host
            if w0 | 0x20202020202020 == 0x2d746e65746e6f63 && w1 | 0x2020202020202020 == 0x676e69646f636e65 { return .contentEncoding }  // content-encoding
            if w0 | 0x2020202000202020 == 0x687475612d777777 && w1 | 0x2020202020202020 == 0x6574616369746e65 { return .wwwAuthenticate }  // www-authenticate
        case 17:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 9, as: UInt64.self)
            if w0 | 0x2020202020202020 == 0x726566736e617274 && w1 | 0x2020202020202000 == 0x6e69646f636e652d && w2 | 0x2020202020202020 == 0x676e69646f636e65 { return .transferEncoding }  // transfer-encoding
            if w0 | 0x2020202020200020 == 0x726177726f662d78 && w1 | 0x2020202000202020 == 0x746f72702d646564 && w2 | 0x2020202020002020 == 0x6f746f72702d6465 { return .xForwardedProto }  // x-forwarded-proto
            if w0 | 0x2020202020002020 == 0x6669646f6d2d6669 && w1 | 0x2020202000202020 == 0x636e69732d646569 && w2 | 0x2020202020002020 == 0x65636e69732d6465 { return .ifModifiedSince }  // if-modified-since
            if w0 | 0x2020202000202020 == 0x736265772d636573 && w1 | 0x2020002020202020 == 0x656b2d74656b636f && w2 | 0x2020200020202020 == 0x79656b2d74656b63 { return .secWebSocketKey }  // sec-websocket-key
        case 18:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 10, as: UInt64.self)
            if w0 | 0x2020002020202020 == 0x75612d79786f7270 && w1 | 0x2020202020202020 == 0x616369746e656874 && w2 | 0x2020202020202020 == 0x6574616369746e65 { return .proxyAuthenticate }  // proxy-authenticate
        case 19:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 11, as: UInt64.self)
            if w0 | 0x2020002020202020 == 0x75612d79786f7270 && w1 | 0x2020202020202020 == 0x74617a69726f6874 && w2 | 0x2020202020202020 == 0x6e6f6974617a6972 { return .proxyAuthorization }  // proxy-authorization
        case 20:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 12, as: UInt64.self)
            if w0 | 0x2020202000202020 == 0x736265772d636573 && w1 | 0x2020002020202020 == 0x63612d74656b636f && w2 | 0x2020202020200020 == 0x7470656363612d74 { return .secWebSocketAccept }  // sec-websocket-accept
        case 21:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 13, as: UInt64.self)
            if w0 | 0x2020202000202020 == 0x736265772d636573 && w1 | 0x2020002020202020 == 0x65762d74656b636f && w2 | 0x2020202020202000 == 0x6e6f69737265762d { return .secWebSocketVersion }  // sec-websocket-version
        case 22:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 14, as: UInt64.self)
            if w0 | 0x2020202000202020 == 0x736265772d636573 && w1 | 0x2020002020202020 == 0x72702d74656b636f && w2 | 0x2020202020202020 == 0x6c6f636f746f7270 { return .secWebSocketProtocol }  // sec-websocket-protocol
        case 24:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            if w0 | 0x2020202000202020 == 0x736265772d636573 && w1 | 0x2020002020202020 == 0x78652d74656b636f && w2 | 0x2020202020202020 == 0x736e6f69736e6574 { return .secWebSocketExtensions }  // sec-websocket-extensions
        case 25:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            let w3 = base.loadUnaligned(fromByteOffset: 17, as: UInt64.self)
            if w0 | 0x2000202020202020 == 0x742d746369727473 && w1 | 0x2020202020202020 == 0x74726f70736e6172 && w2 | 0x2020202020202000 == 0x746972756365732d && w3 | 0x2020202020202020 == 0x7974697275636573 { return .strictTransportSecurity }  // strict-transport-security
        case 27:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            let w3 = base.loadUnaligned(fromByteOffset: 19, as: UInt64.self)
            if w0 | 0x2000202020202020 == 0x632d737365636361 && w1 | 0x2000202020202020 == 0x612d6c6f72746e6f && w2 | 0x2020200020202020 == 0x69726f2d776f6c6c && w3 | 0x2020202020200020 == 0x6e696769726f2d77 { return .accessControlAllowOrigin }  // access-control-allow-origin
        default: break
        }
        return .other
    }
}
