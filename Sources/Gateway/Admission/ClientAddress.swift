import HTTPWire

#if canImport(Glibc)
import Glibc
#endif

/// A numeric IPv4 or IPv6 address as its bytes (an IPv4-mapped IPv6 address is its IPv4 address).
package struct IPAddress: Hashable, Sendable {
    /// 4 bytes (IPv4) or 16 (IPv6), network order.
    package let bytes: [UInt8]

    /// Parses a numeric address (`192.0.2.1`, `2001:db8::1`, `::ffff:192.0.2.1`); no brackets, ports or zone ids.
    init(bytes: [UInt8]) { self.bytes = bytes }

    package init?(_ text: some StringProtocol) {
        let text = String(text)
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            let all = withUnsafeBytes(of: &v6) { Array($0) }
            let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
            bytes = all.starts(with: mappedPrefix) ? Array(all[12...]) : all
        } else {
            return nil
        }
    }

    var isIPv4: Bool { bytes.count == 4 }

    /// The address as `inet_ntop` writes it (`192.0.2.1`, `2001:db8::1`).
    var text: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var bytes = bytes
        _ = inet_ntop(isIPv4 ? AF_INET : AF_INET6, &bytes, &text, socklen_t(text.count))
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// An address block in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`), or one address (`192.0.2.1`: a /32 or /128).
package struct IPBlock: Equatable, Sendable, CustomStringConvertible {
    package let address: IPAddress
    package let prefixLength: Int

    /// Parses `ADDRESS` or `ADDRESS/PREFIX`; nil for anything else (a prefix longer than the address, a host name).
    init(address: IPAddress, prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    package init?(parsing text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        // Written as IPv6, an IPv4-mapped block keeps its IPv4 meaning: `::ffff:10.0.0.0/104` is `10.0.0.0/8`.
        let writtenBits = parts[0].contains(":") ? 128 : 32
        var prefix = address.bytes.count * 8
        if parts.count == 2 {
            guard parts[1].allSatisfy({ ("0"..."9").contains($0) }), let length = Int(parts[1]),
                (0...writtenBits).contains(length)
            else { return nil }
            prefix = length - (writtenBits - address.bytes.count * 8)
            guard prefix >= 0 else { return nil }
        }
        self.address = address
        self.prefixLength = prefix
    }

    /// Whether `candidate` is in this block (an IPv4 address is never in an IPv6 block, nor the other way round).
    package func contains(_ candidate: IPAddress) -> Bool {
        guard candidate.bytes.count == address.bytes.count else { return false }
        var remaining = prefixLength
        for (own, other) in zip(address.bytes, candidate.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if own & mask != other & mask { return false }
            remaining -= 8
        }
        return true
    }

    package var description: String { "\(address.text)/\(prefixLength)" }
}

/// Who a call comes from, for the rate limit: the TCP peer, or, when the peer is one of `server.trusted_proxies`
/// (a load balancer in front of the gateway), the client it forwarded for, read from `X-Forwarded-For` from the right
/// past every trusted address (nginx's `real_ip_recursive on`).
enum ClientAddress {
    /// The client's address. Without trusted proxies, or from an untrusted peer, the peer's. Otherwise the rightmost
    /// `X-Forwarded-For` address that is not trusted; the leftmost when all are; the last one read when an entry is not
    /// an address (what a trusted proxy did not write cannot be trusted further).
    static func resolve(peer: String?, forwardedFor: [String], trusted: [IPBlock]) -> String? {
        guard !trusted.isEmpty, let peer, let peerAddress = IPAddress(peer),
            trusted.contains(where: { $0.contains(peerAddress) })
        else { return peer }
        var client = peer
        for value in forwardedFor.reversed() {
            for element in value.split(separator: ",").reversed() {
                let text = element.trimmingHTTPWhitespace()
                guard let address = IPAddress(text) else { return client }
                client = String(text)
                if !trusted.contains(where: { $0.contains(address) }) { return client }
            }
        }
        return client
    }

    /// The client's address for a request from `peer` with `headers` (see ``resolve(peer:forwardedFor:trusted:)``):
    /// `X-Forwarded-For` is not even read without trusted proxies.
    static func of(peer: String?, headers: HTTPFields?, trusted: [IPBlock]) -> String? {
        guard !trusted.isEmpty else { return peer }
        return resolve(peer: peer, forwardedFor: headers?["X-Forwarded-For"] ?? [], trusted: trusted)
    }

    /// The rate limit's key for an address: an IPv4 address itself, an IPv6 address its /64 (one host or site is
    /// handed a whole /64 and can take a new address from it for every call).
    static func rateLimitKey(_ address: String) -> String {
        let hasColon =
            address.utf8.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: ":")) }
            ?? address.utf8.contains(UInt8(ascii: ":"))
        guard hasColon, let parsed = IPAddress(address), !parsed.isIPv4 else {
            return address
        }
        let block = IPBlock(
            address: IPAddress(bytes: Array(parsed.bytes[..<8]) + [UInt8](repeating: 0, count: 8)), prefixLength: 64)
        return block.description
    }
}
