import CNetShims

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address.
package struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    package enum Family: Sendable, Hashable { case ipv4, ipv6 }

    package let family: Family
    /// Numeric host (`127.0.0.1`, `::1`).
    package let host: String
    package let port: Int

    /// Parses a numeric IPv4 or IPv6 address (no brackets) and a port.
    package init?(numericHost host: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            family = .ipv4
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            family = .ipv6
        } else {
            return nil
        }
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[v6]:port` with a numeric host (`localhost` is taken as 127.0.0.1).
    package init?(parsing text: String) {
        var hostPart: Substring
        var portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        if hostPart == "localhost" { hostPart = "127.0.0.1" }
        guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(portPart)
        else { return nil }
        self.init(numericHost: String(hostPart), port: port)
    }

    package var description: String { family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with this address as a `sockaddr`.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    /// Reads an address from a `sockaddr_storage`.
    init?(storage: sockaddr_storage) {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
            }
            var addr = address.sin_addr
            guard inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            self.init(
                numericHost: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                port: Int(UInt16(bigEndian: address.sin_port)))
        case AF_INET6:
            let address = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
            }
            var addr = address.sin6_addr
            guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            self.init(
                numericHost: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                port: Int(UInt16(bigEndian: address.sin6_port)))
        default:
            return nil
        }
    }
}
