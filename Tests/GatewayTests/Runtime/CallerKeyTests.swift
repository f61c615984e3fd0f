import Testing

@testable import Gateway

/// The fair share's caller key (``CallerKey``): the same caller always gets the same key in a process, and different
/// callers (an API client and an address of the same text, addresses that differ in one byte or in length, across
/// the eight-byte words the bytes are read in) get different ones.
@Suite struct CallerKeyTests {
    @Test func sameCallerSameKey() {
        #expect(CallerKey.of("203.0.113.7", kind: 2) == CallerKey.of("203.0.113.7", kind: 2))
        #expect(
            CallerKey.of(String(repeating: "client-", count: 9), kind: 1)
                == CallerKey.of(String(repeating: "client-", count: 9), kind: 1))
    }

    @Test func kindsAndTextsAreDistinct() {
        #expect(CallerKey.of("10.0.0.1", kind: 1) != CallerKey.of("10.0.0.1", kind: 2))
        #expect(CallerKey.of("", kind: 1) != CallerKey.of("", kind: 2))
        var keys: Set<Int> = []
        var texts: [String] = [""]
        for length in 1...40 { texts.append(String(repeating: "a", count: length)) }
        for length in 1...40 { texts.append(String(repeating: "a", count: length - 1) + "b") }
        texts += ["10.0.0.1", "10.0.0.2", "10.0.0.10", "2001:db8::/64", "2001:db8:0:1::/64", "\u{0}", "\u{0}\u{0}"]
        for text in texts { keys.insert(CallerKey.of(text, kind: 2)) }
        #expect(keys.count == Set(texts).count)
    }
}
