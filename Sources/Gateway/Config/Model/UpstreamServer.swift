import HTTPClientCore
import NetCore

/// One of an upstream's `servers`: a numeric address, `localhost` (127.0.0.1) or a host name, and a port; the
/// client's own type, which resolves it.
package typealias UpstreamServer = HTTPClient.Configuration.Server

extension UpstreamServer {
    /// Parses `host:port` or `[v6]:port` (port 1...65535); `nil` when malformed, or when a name is not one (labels of
    /// letters, digits, `-` and `_`, 1 to 63 characters each, 253 in all).
    package static func parse(_ text: String) -> UpstreamServer? {
        guard let address = ListenAddress.split(text), address.port != 0 else { return nil }
        if address.host == "localhost" || SocketAddress(numericHost: address.host, port: address.port) != nil {
            return UpstreamServer(host: address.host, port: address.port)
        }
        let labels = address.host.split(separator: ".", omittingEmptySubsequences: false)
        guard !address.isIPv6, address.host.utf8.count <= 253,
            labels.allSatisfy({ (1...63).contains($0.utf8.count) && !$0.hasPrefix("-") && !$0.hasSuffix("-") }),
            labels.last?.allSatisfy(\.isNumber) == false
        else { return nil }
        return UpstreamServer(host: address.host.lowercased(), port: address.port)
    }
}
