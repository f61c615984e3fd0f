extension HTTPMethod {
    /// The method `bytes` spell when it is one of the common ones (its string a literal: none is decoded), else nil.
    /// The bytes are compared with static strings (one `memcmp`), not with `String`s (opened, retained and released).
    /// Shared by the HTTP/1 request line and HTTP/2's `:method`.
    private static func known(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod? {
        switch bytes.count {
        case 3:
            if HTTP1Grammar.equals(bytes, "GET") { return HTTPMethod(rawValue: "GET") }
            if HTTP1Grammar.equals(bytes, "PUT") { return HTTPMethod(rawValue: "PUT") }
        case 4:
            if HTTP1Grammar.equals(bytes, "POST") { return HTTPMethod(rawValue: "POST") }
            if HTTP1Grammar.equals(bytes, "HEAD") { return HTTPMethod(rawValue: "HEAD") }
        case 5:
            if HTTP1Grammar.equals(bytes, "PATCH") { return HTTPMethod(rawValue: "PATCH") }
        case 6:
            if HTTP1Grammar.equals(bytes, "DELETE") { return HTTPMethod(rawValue: "DELETE") }
        case 7:
            if HTTP1Grammar.equals(bytes, "OPTIONS") { return HTTPMethod(rawValue: "OPTIONS") }
        default:
            break
        }
        return nil
    }

    /// The method `bytes` spell (a token: the caller checked), without decoding a common one.
    static func of(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod {
        known(bytes) ?? HTTPMethod(HTTP1Grammar.string(bytes))
    }
}
