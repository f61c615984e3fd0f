/// A minimal absolute-URL splitter for `http` and `https` (scheme, host, port, origin-form target), without
/// Foundation, so the client can run on the hot path.
public struct HTTPURL: Sendable, Hashable {
    public var scheme: String
    public var host: String
    public var port: Int
    public var target: String

    public init(parsing string: String) throws {
        guard let colon = string.firstIndex(of: ":"), string[colon...].hasPrefix("://") else {
            throw HTTPClientError.invalidURL(string)
        }
        let scheme = string[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else { throw HTTPClientError.invalidURL(string) }
        let rest = string[string.index(colon, offsetBy: 3)...]
        let isAuthorityEnd: (Character) -> Bool = { $0 == "/" || $0 == "?" || $0 == "#" }
        let authorityEnd = rest.firstIndex(where: isAuthorityEnd) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.isEmpty, !authority.contains("@") else { throw HTTPClientError.invalidURL(string) }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw HTTPClientError.invalidURL(string) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw HTTPClientError.invalidURL(string)
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw HTTPClientError.invalidURL(string) }
        var port = scheme == "https" ? 443 : 80
        if let portText, !portText.isEmpty {
            guard portText.allSatisfy(\.isASCIIDigit), portText.count <= 5, let value = Int(portText), value > 0,
                  value < 65536 else { throw HTTPClientError.invalidURL(string) }
            port = value
        }
        var target = String(rest[authorityEnd...])
        if let fragment = target.firstIndex(of: "#") { target = String(target[..<fragment]) }
        if target.isEmpty || target.hasPrefix("?") { target = "/" + target }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.target = target
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
