import Testing

@testable import Gateway

/// Who a call comes from: the peer, or behind trusted proxies the client they forwarded for; address blocks; the rate
/// limit's key for IPv6 callers.
@Suite struct ClientAddressTests {
    private static func blocks(_ texts: String...) -> [IPBlock] { texts.compactMap(IPBlock.init(parsing:)) }

    @Test func blocksContainWhatTheirPrefixCovers() throws {
        let ten = try #require(IPBlock(parsing: "10.0.0.0/8"))
        #expect(try ten.contains(#require(IPAddress("10.200.3.4"))))
        #expect(try !ten.contains(#require(IPAddress("11.0.0.1"))))
        #expect(try ten.contains(#require(IPAddress("::ffff:10.1.2.3"))), "an IPv4-mapped address is its IPv4 address")
        let odd = try #require(IPBlock(parsing: "192.0.2.64/26"))
        #expect(try odd.contains(#require(IPAddress("192.0.2.127"))))
        #expect(try !odd.contains(#require(IPAddress("192.0.2.128"))))
        let six = try #require(IPBlock(parsing: "2001:db8::/32"))
        #expect(try six.contains(#require(IPAddress("2001:db8:ffff::1"))))
        #expect(try !six.contains(#require(IPAddress("2001:db9::1"))))
        #expect(try !six.contains(#require(IPAddress("10.0.0.1"))), "families never mix")
        let one = try #require(IPBlock(parsing: "127.0.0.1"))
        #expect(try one.prefixLength == 32 && one.contains(#require(IPAddress("127.0.0.1"))))
        #expect(try !one.contains(#require(IPAddress("127.0.0.2"))))
        #expect(try #require(IPBlock(parsing: "0.0.0.0/0")).contains(#require(IPAddress("203.0.113.9"))))
        #expect(IPBlock(parsing: "::ffff:10.0.0.0/104") == IPBlock(parsing: "10.0.0.0/8"))
        #expect(IPBlock(parsing: "10.0.0.0/8")?.description == "10.0.0.0/8")
        #expect(IPBlock(parsing: "2001:db8::/32")?.description == "2001:db8::/32")
        for bad in [
            "", "lb.internal", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "::/129", "::ffff:10.0.0.0/90",
            "[::1]", "10.0.0.1:80", "1.2.3.4/+8", "fe80::1%eth0"
        ] {
            #expect(IPBlock(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func withoutTrustedProxiesThePeerIsTheClient() {
        #expect(ClientAddress.resolve(peer: "192.0.2.1", forwardedFor: ["203.0.113.9"], trusted: []) == "192.0.2.1")
        #expect(
            ClientAddress.resolve(
                peer: "192.0.2.1", forwardedFor: ["203.0.113.9"],
                trusted: Self.blocks("10.0.0.0/8")) == "192.0.2.1", "an untrusted peer's header is ignored")
        #expect(
            ClientAddress.resolve(peer: nil, forwardedFor: ["203.0.113.9"], trusted: Self.blocks("0.0.0.0/0")) == nil)
    }

    @Test func behindTrustedProxiesTheRightmostUntrustedAddressIsTheClient() {
        let trusted = Self.blocks("10.0.0.0/8", "127.0.0.1")
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", forwardedFor: ["203.0.113.9"], trusted: trusted) == "203.0.113.9")
        // The client wrote a fake first entry; the proxies appended the real ones.
        #expect(
            ClientAddress.resolve(peer: "10.0.0.5", forwardedFor: ["1.1.1.1, 203.0.113.9, 10.0.0.7"], trusted: trusted)
                == "203.0.113.9")
        // Several fields are one list, in order.
        #expect(
            ClientAddress.resolve(
                peer: "10.0.0.5", forwardedFor: ["1.1.1.1", "203.0.113.9 ,10.0.0.7"], trusted: trusted)
                == "203.0.113.9")
        #expect(
            ClientAddress.resolve(peer: "10.0.0.5", forwardedFor: ["10.0.0.8, 10.0.0.7"], trusted: trusted)
                == "10.0.0.8",
            "all trusted: the leftmost")
        #expect(
            ClientAddress.resolve(peer: "10.0.0.5", forwardedFor: [], trusted: trusted) == "10.0.0.5",
            "no header: the peer")
        #expect(
            ClientAddress.resolve(peer: "10.0.0.5", forwardedFor: ["203.0.113.9, unknown"], trusted: trusted)
                == "10.0.0.5",
            "an entry that is no address stops the walk at the last trusted hop")
        #expect(
            ClientAddress.resolve(peer: "10.0.0.5", forwardedFor: ["unknown, 10.0.0.7"], trusted: trusted) == "10.0.0.7"
        )
        #expect(
            ClientAddress.resolve(peer: "::1", forwardedFor: ["2001:db8::5"], trusted: Self.blocks("::1"))
                == "2001:db8::5")
    }

    @Test func anIPv6CallerIsLimitedByItsSlash64() {
        #expect(ClientAddress.rateLimitKey("192.0.2.1") == "192.0.2.1")
        #expect(ClientAddress.rateLimitKey("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(
            ClientAddress.rateLimitKey("2001:db8:1:2:bbbb::9") == ClientAddress.rateLimitKey("2001:db8:1:2:aaaa::1"))
        #expect(ClientAddress.rateLimitKey("2001:db8:1:3::1") != ClientAddress.rateLimitKey("2001:db8:1:2::1"))
        #expect(
            ClientAddress.rateLimitKey("::ffff:192.0.2.1") == "::ffff:192.0.2.1", "mapped IPv4: as written, one address"
        )
    }
}
