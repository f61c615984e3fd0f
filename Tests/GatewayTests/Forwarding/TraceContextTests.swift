import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct TraceContextTests {
    @Test func theTraceIDOfAValidTraceparentOnly() {
        func id(_ value: String) -> String? { TraceContext.traceID(in: ["traceparent": value]) }
        #expect(id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(
            id("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later") == "4bf92f3577b34da6a3ce929d0e0e4736",
            "a later version may add fields")
        #expect(TraceContext.traceID(in: [:]) == nil)
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // version 00 has no more fields
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // all-zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // all-zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // forbidden version
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // short
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"},{\"x\":\"",  // JSON in the value
            ""
        ] {
            #expect(id(bad) == nil, "\(bad)")
        }
    }
}
