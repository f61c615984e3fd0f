extension HTTPFieldName {
    /// The known name `bytes` spell, ignoring ASCII case: the name's length picks the candidates, and each is
    /// compared a word at a time (a letter's case bit masked, every other byte exact).
    static func lookup(_ bytes: UnsafeRawBufferPointer) -> HTTPFieldName {
        guard let base = bytes.baseAddress else { return .other }
        switch bytes.count {
        case 2:
            let w0 =
                UInt64(base.loadUnaligned(as: UInt16.self)) | UInt64(
                    base.loadUnaligned(fromByteOffset: 0, as: UInt16.self)) << 16
            if w0 | 0x2020_2020 == 0x6574_6574 { return .te }  // te
        case 3:
            let w0 =
                UInt64(base.loadUnaligned(as: UInt16.self)) | UInt64(
                    base.loadUnaligned(fromByteOffset: 1, as: UInt16.self)) << 16
            if w0 | 0x2020_2020 == 0x6169_6976 { return .via }  // via
            if w0 | 0x2020_2020 == 0x6567_6761 { return .age }  // age
        case 4:
            let w0 =
                UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(
                    base.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) << 32
            if w0 | 0x2020_2020_2020_2020 == 0x7473_6f68_7473_6f68 { return .host }  // host
            if w0 | 0x2020_2020_2020_2020 == 0x6574_6164_6574_6164 { return .date }  // date
            if w0 | 0x2020_2020_2020_2020 == 0x7972_6176_7972_6176 { return .vary }  // vary
            if w0 | 0x2020_2020_2020_2020 == 0x6761_7465_6761_7465 { return .etag }  // etag
        case 5:
            let w0 =
                UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(
                    base.loadUnaligned(fromByteOffset: 1, as: UInt32.self)) << 32
            if w0 | 0x2020_2020_2020_2020 == 0x6567_6e61_676e_6172 { return .range }  // range
        case 6:
            let w0 =
                UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(
                    base.loadUnaligned(fromByteOffset: 2, as: UInt32.self)) << 32
            if w0 | 0x2020_2020_2020_2020 == 0x7463_6570_6570_7865 { return .expect }  // expect
            if w0 | 0x2020_2020_2020_2020 == 0x6569_6b6f_6b6f_6f63 { return .cookie }  // cookie
            if w0 | 0x2020_2020_2020_2020 == 0x7470_6563_6563_6361 { return .accept }  // accept
            if w0 | 0x2020_2020_2020_2020 == 0x7265_7672_7672_6573 { return .server }  // server
            if w0 | 0x2020_2020_2020_2020 == 0x6e69_6769_6769_726f { return .origin }  // origin
            if w0 | 0x2020_2020_2020_2020 == 0x616d_6761_6761_7270 { return .pragma }  // pragma
        case 7:
            let w0 =
                UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(
                    base.loadUnaligned(fromByteOffset: 3, as: UInt32.self)) << 32
            if w0 | 0x2020_2020_2020_2020 == 0x7265_6c69_6961_7274 { return .trailer }  // trailer
            if w0 | 0x2020_2020_2020_2020 == 0x6564_6172_7267_7075 { return .upgrade }  // upgrade
            if w0 | 0x2020_2020_2020_2020 == 0x7265_7265_6566_6572 { return .referer }  // referer
            if w0 | 0x2020_2020_2020_2020 == 0x7365_7269_6970_7865 { return .expires }  // expires
            if w0 | 0x2020_2000_0020_2020 == 0x6376_732d_2d74_6c61 { return .altSvc }  // alt-svc
        case 8:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            if w0 | 0x2020_2020_2020_2020 == 0x6e6f_6974_6163_6f6c { return .location }  // location
        case 9:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 1, as: UInt64.self)
            if w0 | 0x2000_2020_2020_0020 == 0x692d_6c61_6572_2d78
                && w1 | 0x2020_0020_2020_2000 == 0x7069_2d6c_6165_722d
            {
                return .xRealIp
            }  // x-real-ip
            if w0 | 0x2020_2020_2020_2020 == 0x6564_7261_7772_6f66
                && w1 | 0x2020_2020_2020_2020 == 0x6465_6472_6177_726f
            {
                return .forwarded
            }  // forwarded
            if w0 | 0x2020_0020_2020_0020 == 0x656b_2d69_7061_2d78
                && w1 | 0x2020_2000_2020_2000 == 0x7965_6b2d_6970_612d
            {
                return .xApiKey
            }  // x-api-key
        case 10:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 2, as: UInt64.self)
            if w0 | 0x2020_2020_2020_2020 == 0x6974_6365_6e6e_6f63
                && w1 | 0x2020_2020_2020_2020 == 0x6e6f_6974_6365_6e6e
            {
                return .connection
            }  // connection
            if w0 | 0x2020_2000_2020_2020 == 0x696c_612d_7065_656b
                && w1 | 0x2020_2020_2000_2020 == 0x6576_696c_612d_7065
            {
                return .keepAlive
            }  // keep-alive
            if w0 | 0x2020_2020_0020_2020 == 0x6b6f_6f63_2d74_6573
                && w1 | 0x2020_2020_2020_0020 == 0x6569_6b6f_6f63_2d74
            {
                return .setCookie
            }  // set-cookie
            if w0 | 0x2020_2000_2020_2020 == 0x6567_612d_7265_7375
                && w1 | 0x2020_2020_2000_2020 == 0x746e_6567_612d_7265
            {
                return .userAgent
            }  // user-agent
            if w0 | 0x2020_2020_2020_2020 == 0x6174_7365_6361_7274
                && w1 | 0x2020_2020_2020_2020 == 0x6574_6174_7365_6361
            {
                return .tracestate
            }  // tracestate
        case 11:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 3, as: UInt64.self)
            if w0 | 0x2020_2020_2020_2020 == 0x7261_7065_6361_7274
                && w1 | 0x2020_2020_2020_2020 == 0x746e_6572_6170_6563
            {
                return .traceparent
            }  // traceparent
            if w0 | 0x2020_0020_2020_2020 == 0x6661_2d79_7274_6572
                && w1 | 0x2020_2020_2000_2020 == 0x7265_7466_612d_7972
            {
                return .retryAfter
            }  // retry-after
        case 12:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 4, as: UInt64.self)
            if w0 | 0x2020_2020_2020_0020 == 0x7365_7571_6572_2d78
                && w1 | 0x2020_0020_2020_2020 == 0x6469_2d74_7365_7571
            {
                return .xRequestId
            }  // x-request-id
            if w0 | 0x20_2020_2020_2020 == 0x2d74_6e65_746e_6f63 && w1 | 0x2020_2020_0020_2020 == 0x6570_7974_2d74_6e65
            {
                return .contentType
            }  // content-type
        case 13:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 5, as: UInt64.self)
            if w0 | 0x2020_2020_2020_2020 == 0x7a69_726f_6874_7561
                && w1 | 0x2020_2020_2020_2020 == 0x6e6f_6974_617a_6972
            {
                return .authorization
            }  // authorization
            if w0 | 0x2020_0020_2020_2020 == 0x6f63_2d65_6863_6163
                && w1 | 0x2020_2020_2020_2000 == 0x6c6f_7274_6e6f_632d
            {
                return .cacheControl
            }  // cache-control
            if w0 | 0x2020_2000_2020_2020 == 0x646f_6d2d_7473_616c
                && w1 | 0x2020_2020_2020_2020 == 0x6465_6966_6964_6f6d
            {
                return .lastModified
            }  // last-modified
            if w0 | 0x20_2020_2000_2020 == 0x2d65_6e6f_6e2d_6669 && w1 | 0x2020_2020_2000_2020 == 0x6863_7461_6d2d_656e
            {
                return .ifNoneMatch
            }  // if-none-match
            if w0 | 0x20_2020_2020_2020 == 0x2d74_6e65_746e_6f63 && w1 | 0x2020_2020_2000_2020 == 0x6567_6e61_722d_746e
            {
                return .contentRange
            }  // content-range
        case 14:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 6, as: UInt64.self)
            if w0 | 0x20_2020_2020_2020 == 0x2d74_6e65_746e_6f63 && w1 | 0x2020_2020_2020_0020 == 0x6874_676e_656c_2d74
            {
                return .contentLength
            }  // content-length
            if w0 | 0x2020_0000_2020_2020 == 0x6573_2d32_7074_7468
                && w1 | 0x2020_2020_2020_2020 == 0x7367_6e69_7474_6573
            {
                return .http2Settings
            }  // http2-settings
        case 15:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 7, as: UInt64.self)
            if w0 | 0x2020_2020_2020_0020 == 0x7261_7772_6f66_2d78
                && w1 | 0x2020_2000_2020_2020 == 0x726f_662d_6465_6472
            {
                return .xForwardedFor
            }  // x-forwarded-for
            if w0 | 0x2000_2020_2020_2020 == 0x652d_7470_6563_6361
                && w1 | 0x2020_2020_2020_2020 == 0x676e_6964_6f63_6e65
            {
                return .acceptEncoding
            }  // accept-encoding
            if w0 | 0x2000_2020_2020_2020 == 0x6c2d_7470_6563_6361
                && w1 | 0x2020_2020_2020_2020 == 0x6567_6175_676e_616c
            {
                return .acceptLanguage
            }  // accept-language
        case 16:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            if w0 | 0x2020_0020_2020_2020 == 0x6f63_2d79_786f_7270
                && w1 | 0x2020_2020_2020_2020 == 0x6e6f_6974_6365_6e6e
            {
                return .proxyConnection
            }  // proxy-connection
            if w0 | 0x2020_2020_2020_0020 == 0x7261_7772_6f66_2d78
                && w1 | 0x2020_2020_0020_2020 == 0x7473_6f68_2d64_6564
            {
                return .xForwardedHost
            }  // x-forwarded-host
            if w0 | 0x20_2020_2020_2020 == 0x2d74_6e65_746e_6f63 && w1 | 0x2020_2020_2020_2020 == 0x676e_6964_6f63_6e65
            {
                return .contentEncoding
            }  // content-encoding
            if w0 | 0x2020_2020_0020_2020 == 0x6874_7561_2d77_7777
                && w1 | 0x2020_2020_2020_2020 == 0x6574_6163_6974_6e65
            {
                return .wwwAuthenticate
            }  // www-authenticate
        case 17:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 9, as: UInt64.self)
            if w0 | 0x2020_2020_2020_2020 == 0x7265_6673_6e61_7274
                && w1 | 0x2020_2020_2020_2000 == 0x6e69_646f_636e_652d
                && w2 | 0x2020_2020_2020_2020 == 0x676e_6964_6f63_6e65
            {
                return .transferEncoding
            }  // transfer-encoding
            if w0 | 0x2020_2020_2020_0020 == 0x7261_7772_6f66_2d78
                && w1 | 0x2020_2020_0020_2020 == 0x746f_7270_2d64_6564
                && w2 | 0x2020_2020_2000_2020 == 0x6f74_6f72_702d_6465
            {
                return .xForwardedProto
            }  // x-forwarded-proto
            if w0 | 0x2020_2020_2000_2020 == 0x6669_646f_6d2d_6669
                && w1 | 0x2020_2020_0020_2020 == 0x636e_6973_2d64_6569
                && w2 | 0x2020_2020_2000_2020 == 0x6563_6e69_732d_6465
            {
                return .ifModifiedSince
            }  // if-modified-since
            if w0 | 0x2020_2020_0020_2020 == 0x7362_6577_2d63_6573
                && w1 | 0x2020_0020_2020_2020 == 0x656b_2d74_656b_636f
                && w2 | 0x2020_2000_2020_2020 == 0x7965_6b2d_7465_6b63
            {
                return .secWebSocketKey
            }  // sec-websocket-key
        case 18:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 10, as: UInt64.self)
            if w0 | 0x2020_0020_2020_2020 == 0x7561_2d79_786f_7270
                && w1 | 0x2020_2020_2020_2020 == 0x6163_6974_6e65_6874
                && w2 | 0x2020_2020_2020_2020 == 0x6574_6163_6974_6e65
            {
                return .proxyAuthenticate
            }  // proxy-authenticate
        case 19:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 11, as: UInt64.self)
            if w0 | 0x2020_0020_2020_2020 == 0x7561_2d79_786f_7270
                && w1 | 0x2020_2020_2020_2020 == 0x7461_7a69_726f_6874
                && w2 | 0x2020_2020_2020_2020 == 0x6e6f_6974_617a_6972
            {
                return .proxyAuthorization
            }  // proxy-authorization
        case 20:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 12, as: UInt64.self)
            if w0 | 0x2020_2020_0020_2020 == 0x7362_6577_2d63_6573
                && w1 | 0x2020_0020_2020_2020 == 0x6361_2d74_656b_636f
                && w2 | 0x2020_2020_2020_0020 == 0x7470_6563_6361_2d74
            {
                return .secWebSocketAccept
            }  // sec-websocket-accept
        case 21:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 13, as: UInt64.self)
            if w0 | 0x2020_2020_0020_2020 == 0x7362_6577_2d63_6573
                && w1 | 0x2020_0020_2020_2020 == 0x6576_2d74_656b_636f
                && w2 | 0x2020_2020_2020_2000 == 0x6e6f_6973_7265_762d
            {
                return .secWebSocketVersion
            }  // sec-websocket-version
        case 22:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 14, as: UInt64.self)
            if w0 | 0x2020_2020_0020_2020 == 0x7362_6577_2d63_6573
                && w1 | 0x2020_0020_2020_2020 == 0x7270_2d74_656b_636f
                && w2 | 0x2020_2020_2020_2020 == 0x6c6f_636f_746f_7270
            {
                return .secWebSocketProtocol
            }  // sec-websocket-protocol
        case 24:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            if w0 | 0x2020_2020_0020_2020 == 0x7362_6577_2d63_6573
                && w1 | 0x2020_0020_2020_2020 == 0x7865_2d74_656b_636f
                && w2 | 0x2020_2020_2020_2020 == 0x736e_6f69_736e_6574
            {
                return .secWebSocketExtensions
            }  // sec-websocket-extensions
        case 25:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            let w3 = base.loadUnaligned(fromByteOffset: 17, as: UInt64.self)
            if w0 | 0x2000_2020_2020_2020 == 0x742d_7463_6972_7473
                && w1 | 0x2020_2020_2020_2020 == 0x7472_6f70_736e_6172
                && w2 | 0x2020_2020_2020_2000 == 0x7469_7275_6365_732d
                && w3 | 0x2020_2020_2020_2020 == 0x7974_6972_7563_6573
            {
                return .strictTransportSecurity
            }  // strict-transport-security
        case 27:
            let w0 = base.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
            let w1 = base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
            let w2 = base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            let w3 = base.loadUnaligned(fromByteOffset: 19, as: UInt64.self)
            if w0 | 0x2000_2020_2020_2020 == 0x632d_7373_6563_6361
                && w1 | 0x2000_2020_2020_2020 == 0x612d_6c6f_7274_6e6f
                && w2 | 0x2020_2000_2020_2020 == 0x6972_6f2d_776f_6c6c
                && w3 | 0x2020_2020_2020_0020 == 0x6e69_6769_726f_2d77
            {
                return .accessControlAllowOrigin
            }  // access-control-allow-origin
        default: break
        }
        return .other
    }
}
