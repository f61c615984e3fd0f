import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct ErrorBodyTests {
    @Test func codesAndEscaping() {
        #expect(ErrorBody.json(.notFound, requestID: "abc") == #"{"error":"not_found","request_id":"abc"}"#)
        #expect(
            ErrorBody.json(.badGateway, requestID: "a\"b\\c\n\u{1}")
                == #"{"error":"bad_gateway","request_id":"a\"b\\c\n\u0001"}"#)
        #expect(ErrorBody.escape("é€\u{7F}\u{2028}x\u{2029}") == #"é€\u007f\u2028x\u2029"#)
        #expect(ErrorBody.escape("plain-id-0123") == "plain-id-0123")
        #expect(
            ErrorBody.bytes(.forbidden, requestID: "q\"1") == Array(ErrorBody.json(.forbidden, requestID: "q\"1").utf8))
        #expect(
            GatewayErrorCode.allCases.map(\.rawValue) == [
                "not_found", "method_not_allowed", "unauthorized",
                "forbidden", "bad_request", "payload_too_large", "too_many_requests", "bad_gateway",
                "service_unavailable",
                "gateway_timeout", "upstream_auth_failed"
            ])
        #expect(GatewayErrorCode.allCases.map(\.status) == [404, 405, 401, 403, 400, 413, 429, 502, 503, 504, 502])
    }
}
