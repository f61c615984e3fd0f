import HTTPWire
import Testing
@testable import Gateway

/// How the forwarding headers join the headers built for an upstream.
@Suite struct ProxyHeadersTests {
    private let forwarding = [("X-Request-Id", "r1"), ("Via", "1.1 moya-gateway"), ("X-Forwarded-Proto", "http")]

    @Test func forwardingHeadersAreAddedWhenNothingCollides() {
        var headers = ["Accept": "application/json"]
        ProxyHeaders.mergeForwarding(forwarding, into: &headers, configured: HTTPHeaders())
        #expect(headers == ["Accept": "application/json", "X-Request-Id": "r1", "Via": "1.1 moya-gateway",
                            "X-Forwarded-Proto": "http"])
    }

    @Test func aConfiguredHeaderOfTheSameNameInAnotherSpellingIsReplaced() {
        let configured: HTTPHeaders = ["via": "custom", "x-forwarded-proto": "https", "X-Team": "a"]
        var headers = ["Accept": "*/*", "via": "custom", "x-forwarded-proto": "https", "X-Team": "a"]
        ProxyHeaders.mergeForwarding(forwarding, into: &headers, configured: configured)
        #expect(headers == ["Accept": "*/*", "X-Team": "a", "X-Request-Id": "r1", "Via": "1.1 moya-gateway",
                            "X-Forwarded-Proto": "http"], "one field per name, the gateway's value, as merge(_:into:) does")
        var merged = ["Accept": "*/*", "via": "custom", "x-forwarded-proto": "https", "X-Team": "a"]
        ProxyHeaders.merge(forwarding, into: &merged)
        #expect(merged == headers)
    }
}
