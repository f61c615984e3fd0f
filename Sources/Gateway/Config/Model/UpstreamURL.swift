/// An upstream's `base_url`, split: origin and base path.
package struct UpstreamURL: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    package var scheme: String
    /// Host without brackets.
    package var host: String
    /// Explicit or default (80/443) port.
    package var port: Int
    /// Base path without a trailing slash; `""` for the root. Upstream targets are `basePath + routePath`.
    package var basePath: String

    package init(scheme: String, host: String, port: Int, basePath: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.basePath = basePath
    }

    package var isTLS: Bool { scheme == "https" }

    /// `scheme://host[:port]` (port omitted when it is the scheme's default).
    package var origin: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
        return isDefault ? "\(scheme)://\(hostPart)" : "\(scheme)://\(hostPart):\(port)"
    }

    /// The value for a `Host` header to this upstream.
    package var hostHeader: String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
        return isDefault ? hostPart : "\(hostPart):\(port)"
    }

    package var description: String { origin + basePath }
}
