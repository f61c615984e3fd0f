import Gateway
import HTTPClientCore

/// `url`: a string through the client's `HTTPURL(parsing:)` and the configuration's `UpstreamURLParser` (`base_url`).
///
/// Checked: `HTTPURL` gives `http`/`https`, a non-empty host, a port in 1–65535 and a target starting with `/`, and its
/// parts written back as a URL parse to the same parts; `UpstreamURLParser` gives a lower-case host, a port in range
/// and a normalised base path without trailing `/`, and its own `description` parses back to itself; every
/// `base_url` the configuration accepts is a URL the client parses to the same scheme, host and port.
enum URLTarget {
    static let target = FuzzTarget(
        name: "url",
        summary:
            "HTTPURL and base_url parsers: well-formed parts, round trips, config-accepted URLs parse in the client",
        maxLength: 2048, dictionary: "path.dict", run: run)

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let text = FuzzBytes.string(bytes)
        let client = try? HTTPURL(parsing: text)
        if let client {
            try checkClientURL(client)
        }
        if case .success(let upstream) = UpstreamURLParser.parse(text) {
            try checkUpstreamURL(upstream)
            let origin = upstream.description
            guard let parsed = try? HTTPURL(parsing: origin) else {
                throw failure("the client cannot parse the accepted base_url \(origin)")
            }
            try check(
                parsed.scheme == upstream.scheme && parsed.host.lowercased() == upstream.host
                    && parsed.port == upstream.port, "client and base_url parsers disagree on \(origin)")
        }
    }

    static func checkClientURL(_ url: HTTPURL) throws(FuzzFailure) {
        try check(url.scheme == "http" || url.scheme == "https", "scheme \(url.scheme)")
        try check(!url.host.isEmpty, "empty host")
        try check((1...65535).contains(url.port), "port \(url.port)")
        try check(FuzzBytes.hasPrefix(url.target, "/"), "target \(url.target) does not start with /")
        try check(!FuzzBytes.contains(url.target, byte: UInt8(ascii: "#")), "fragment kept in the target")
        try check(
            !FuzzBytes.contains(url.host, byte: UInt8(ascii: "@"))
                && !FuzzBytes.contains(url.host, byte: UInt8(ascii: "/")),
            "host \(url.host) with userinfo or path")
        try check(
            !url.host.utf8.contains { $0 <= 0x20 || $0 == 0x7F }, "host \(url.host.debugDescription) with controls")
        // Brackets as a URL writes an IPv6 host; a host the lenient splitter took with brackets inside goes as it was.
        let bracketed =
            (FuzzBytes.contains(url.host, byte: UInt8(ascii: ":")) || FuzzBytes.hasPrefix(url.host, "["))
            && !FuzzBytes.contains(url.host, byte: UInt8(ascii: "]"))
        let hostPart = bracketed ? "[\(url.host)]" : url.host
        let written = "\(url.scheme)://\(hostPart):\(url.port)\(url.target)"
        guard let again = try? HTTPURL(parsing: written) else {
            throw failure("the URL written back does not parse: \(written)")
        }
        try check(again == url, "round trip changed the URL: \(url) -> \(again)")
    }

    static func checkUpstreamURL(_ url: UpstreamURL) throws(FuzzFailure) {
        try check(url.scheme == "http" || url.scheme == "https", "scheme \(url.scheme)")
        try check(!url.host.isEmpty && url.host == url.host.lowercased(), "host \(url.host)")
        try check((1...65535).contains(url.port), "port \(url.port)")
        if !url.basePath.isEmpty {
            try check(url.basePath.hasPrefix("/") && !url.basePath.hasSuffix("/"), "base path \(url.basePath)")
            guard case .success(let normal) = PathNormalizer.normalize(path: url.basePath) else {
                throw failure("base path \(url.basePath) is refused by the normaliser")
            }
            try check(normal == url.basePath, "base path \(url.basePath) is not normalised")
        }
        guard case .success(let again) = UpstreamURLParser.parse(url.description) else {
            throw failure("base_url written back does not parse: \(url.description)")
        }
        try check(again == url, "base_url round trip changed: \(url) -> \(again)")
    }
}
