import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct SharedResponsePolicyTests {
    @Test func responsesMeantForOneCallerAreNamed() {
        #expect(SharedResponsePolicy.unshareableReason(["Set-Cookie": "a=b"]) == "Set-Cookie")
        #expect(
            SharedResponsePolicy.unshareableReason(["Cache-Control": "max-age=0, Private"]) == "Cache-Control: private")
        #expect(
            SharedResponsePolicy.unshareableReason(["Cache-Control": "private=\"X-A\""]) == "Cache-Control: private")
        #expect(SharedResponsePolicy.unshareableReason(["cache-control": "no-store"]) == "Cache-Control: no-store")
        #expect(SharedResponsePolicy.unshareableReason(["Vary": "Accept, *"]) == "Vary: *")
        #expect(
            SharedResponsePolicy.unshareableReason(["Cache-Control": "public, max-age=60", "Vary": "Accept"]) == nil)
        #expect(SharedResponsePolicy.unshareableReason(["Cache-Control": "no-cache"]) == nil)
    }
}
