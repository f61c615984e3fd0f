import NetCore

/// A listening address: `host:port`, or `[v6addr]:port` for IPv6.
package struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host without brackets (`127.0.0.1`, `::1`, `0.0.0.0`, `localhost`).
    package var host: String
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Whether the host is an IPv6 literal (contains `:`).
    package var isIPv6: Bool { host.contains(":") }

    /// `host:port`, with brackets around IPv6 hosts.
    package var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The socket address (`localhost` is 127.0.0.1).
    package var socketAddress: SocketAddress? {
        SocketAddress(numericHost: host == "localhost" ? "127.0.0.1" : host, port: port)
    }

    /// Parses `host:port` or `[v6]:port`; `nil` when malformed (port must be 0...65535; 0 = any free port) or when the
    /// host is neither a numeric address nor `localhost` (listeners bind without name resolution).
    package static func parse(_ text: String) -> ListenAddress? {
        guard let address = split(text),
            address.host == "localhost" || SocketAddress(numericHost: address.host, port: address.port) != nil
        else { return nil }
        return address
    }

    /// `host:port` or `[v6]:port` taken apart, the host a name or a numeric address (not checked further); port
    /// 0...65535.
    static func split(_ text: String) -> ListenAddress? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard !host.isEmpty, host.contains(":"),
                host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0 == "%" })
            else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.isEmpty, !host.contains(":"),
                host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
            else { return nil }
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(portText), port <= 65535
        else { return nil }
        return ListenAddress(host: String(host), port: port)
    }
}
