import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct RetryAfterTests {
    @Test func wholeSecondsRoundedUpAtLeastOne() {
        #expect(RetryAfter.value(.milliseconds(1)) == "1")
        #expect(RetryAfter.value(.zero) == "1")
        #expect(RetryAfter.value(.seconds(7)) == "7")
        #expect(RetryAfter.value(.milliseconds(7001)) == "8")
    }
}
