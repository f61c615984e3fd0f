import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct CoalescingKeyTests {
    func key(
        _ method: HTTPMethod = .get, url: String = "http://u:1/v1/x?b=2&a=1", vary: [String] = ["Accept"],
        headers: HTTPFields = ["Accept": "application/json"], client: String? = nil
    ) -> CoalescingKey? {
        CoalescingKey.make(
            method: method, upstream: "users", upstreamURL: url, varyHeaders: vary,
            requestHeaders: headers, clientName: client)
    }

    @Test func onlyGetAndHeadCoalesce() {
        #expect(key(.get) != nil && key(.head) != nil)
        #expect(key(.post) == nil && key(.put) == nil && key("get") == nil)
        #expect(key(.get) != key(.head))
    }

    /// COAL-02: content negotiation, range and conditional headers are in every key, listed in `coalesce_vary` or not.
    @Test func headersThatSelectAVariantAreAlwaysInTheKey() {
        let plain: HTTPFields = ["Accept": "application/json"]
        for (name, value) in [
            ("Accept-Encoding", "gzip"), ("Accept-Language", "de"), ("Range", "bytes=0-9"),
            ("If-Range", "\"v1\""), ("If-None-Match", "\"v1\""), ("If-Match", "\"v1\""),
            ("If-Modified-Since", "Sat, 28 Nov 2026 03:00:00 GMT"),
            ("if-unmodified-since", "Sat, 28 Nov 2026 03:00:00 GMT")
        ] {
            var with = plain
            with.add(name: name, value: value)
            #expect(key(headers: with) != key(headers: plain), "\(name)")
            #expect(key(headers: with) == key(headers: with), "\(name): same values share")
            var other = plain
            other.add(name: name, value: value + "x")
            #expect(key(headers: with) != key(headers: other), "\(name)")
        }
        #expect(
            key(vary: [], headers: ["Accept": "text/plain"]) != key(vary: [], headers: ["Accept": "application/json"]))
        // Listed in `coalesce_vary` too: one part of the key, not two.
        let listed = key(vary: ["accept-encoding", "Accept"], headers: ["Accept": "*/*", "Accept-Encoding": "gzip"])
        #expect(listed?.vary == ["accept-encoding:gzip", "accept:*/*"])
        #expect(
            key(vary: [], headers: ["Range": "bytes=1-2", "Accept": "*/*"])?.vary == ["accept:*/*", "range:bytes=1-2"])
        #expect(key(vary: [], headers: [:])?.vary == [])
    }

    @Test func queryOrderDoesNotMatterButValuesDo() {
        #expect(key(url: "http://u:1/v1/x?b=2&a=1") == key(url: "http://u:1/v1/x?a=1&b=2"))
        #expect(key(url: "http://u:1/v1/x?a=1") != key(url: "http://u:1/v1/x?a=2"))
        #expect(key(url: "http://u:1/v1/x") != key(url: "http://u:1/v1/y"))
        #expect(CoalescingKey.sortedQuery("/x?c=3&a=1&b=2") == "/x?a=1&b=2&c=3")
        #expect(
            CoalescingKey.sortedQuery("/x?sort=name&a=1&sort=date") == "/x?a=1&sort=name&sort=date",
            "parameters of one name keep their order")
        #expect(key(url: "http://u:1/v1/x?a=2&a=1") != key(url: "http://u:1/v1/x?a=1&a=2"))
    }

    @Test func varyHeadersSplitKeys() {
        #expect(key(headers: ["Accept": "text/html"]) != key(headers: ["Accept": "application/json"]))
        #expect(
            key(headers: ["accept": "application/json", "X-Other": "1"]) == key(headers: ["Accept": "application/json"])
        )
    }

    /// FUZZ-05: different identities → different keys; the same identity → the same key.
    @Test func identityPartitions() {
        var rng = SplitMix64(seed: 5)
        var seen: [UInt128: String] = [:]
        for index in 0..<5_000 {
            let auth = "Bearer t\(rng.next() % 1_000_000)-\(index)"
            let hash = CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": auth])
            if let other = seen[hash] { #expect(other == auth) }
            seen[hash] = auth
            #expect(CoalescingKey.identityHash(clientName: nil, headers: ["authorization": auth]) == hash)
        }
        let base = CoalescingKey.identityHash(clientName: nil, headers: [:])
        #expect(CoalescingKey.identityHash(clientName: "web", headers: [:]) != base)
        #expect(CoalescingKey.identityHash(clientName: "", headers: [:]) != base)
        #expect(CoalescingKey.identityHash(clientName: nil, headers: ["Cookie": "s=1"]) != base)
        // Moving bytes between the fields changes the hash.
        #expect(
            CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": "a", "Cookie": "b"])
                != CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": "ab"]))
        #expect(
            CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": "x"])
                != CoalescingKey.identityHash(clientName: nil, headers: ["Cookie": "x"]))
        #expect(key(client: "web") != key(client: "billing"))
        #expect(key(headers: ["Accept": "application/json", "Cookie": "a=1"]) != key())
    }

    @Test func stableAcrossRunsAndNoSecretsInDescription() throws {
        var hasher = FNV1a128()
        hasher.bytes("a".utf8)
        #expect(hasher.value == 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964)
        let k = try #require(key(headers: ["Accept": "x", "Authorization": "Bearer canary-123"]))
        #expect(!k.description.contains("canary-123"))
    }
}
