import Foundation
import Testing

@testable import Gateway

/// The handshake's accept value (RFC 6455 §4.2.2), which the gateway checks on the upstream's 101.
@Suite struct WebSocketTunnelTests {
    @Test func acceptValueIsTheRFCsExample() {
        #expect(WebSocketTunnel.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func newKeysAreSixteenRandomBytes() {
        let keys = Set((0..<100).map { _ in WebSocketTunnel.newKey() })
        #expect(keys.count == 100)
        #expect(keys.allSatisfy { Data(base64Encoded: $0)?.count == 16 })
    }
}
