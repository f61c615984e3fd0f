/// Parses and checks an upstream `base_url`: `http` or `https`, a host, an optional port, an optional base path; no
/// userinfo, query or fragment.
package enum UpstreamURLParser {
    package static func parse(_ text: String) -> Result<UpstreamURL, PathError> {
        guard let schemeEnd = text.range(of: "://") else {
            return .failure(PathError("missing scheme (use http:// or https://)"))
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            return .failure(PathError("unsupported scheme '\(scheme)' (use http or https)"))
        }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let remainder = rest[authorityEnd...]
        if authority.contains("@") { return .failure(PathError("must not contain userinfo (user:password@)")) }
        if remainder.contains("?") || remainder.contains("#") {
            return .failure(PathError("must not contain a query or fragment"))
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(PathError("unclosed '[' in host")) }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                return .failure(PathError("invalid host"))
            }
            guard !host.isEmpty, host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                return .failure(PathError("invalid IPv6 host"))
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
            else { return .failure(PathError("invalid host")) }
        }
        guard !host.isEmpty else { return .failure(PathError("missing host")) }
        var port = scheme == "https" ? 443 : 80
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = Int(portText), (1...65535).contains(value)
            else {
                return .failure(PathError("invalid port"))
            }
            port = value
        }
        var basePath = ""
        if !remainder.isEmpty {
            switch PathNormalizer.normalize(path: String(remainder)) {
            case .failure(let error): return .failure(PathError("invalid path: \(error.reason)"))
            case .success(let normalized):
                basePath = normalized
                while basePath.hasSuffix("/") { basePath.removeLast() }
            }
        }
        return .success(UpstreamURL(scheme: scheme, host: host.lowercased(), port: port, basePath: basePath))
    }
}
