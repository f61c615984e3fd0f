import Testing

@testable import HTTPClientCore

/// The `close` element of a response's `Connection` field, found in its bytes (a connection that says it closes is not
/// reused).
@Suite struct ConnectionCloseTokenTests {
    private func hasClose(_ value: String) -> Bool {
        Array(value.utf8).withUnsafeBytes { HTTPClient.connectionListHasClose($0) }
    }

    @Test func findsCloseAmongElementsIgnoringCaseAndWhitespace() {
        #expect(hasClose("close"))
        #expect(hasClose("CLOSE"))
        #expect(hasClose("Keep-Alive, Close"))
        #expect(hasClose(" \tclose\t "))
        #expect(hasClose("upgrade,close,te"))
        #expect(hasClose(",,close,"))
    }

    @Test func otherElementsAreNotClose() {
        #expect(!hasClose(""))
        #expect(!hasClose("keep-alive"))
        #expect(!hasClose("closed"))
        #expect(!hasClose("clos"))
        #expect(!hasClose("xclose"))
        #expect(!hasClose("close-x, keep-alive"))
        #expect(!hasClose("cl ose"))
        #expect(!hasClose("#lose"))
    }
}
