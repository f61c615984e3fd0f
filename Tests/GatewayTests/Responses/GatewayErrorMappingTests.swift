import HTTPClientCore
import Moya
import Testing

@testable import Gateway

/// How upstream client failures become the gateway's error responses.
@Suite struct GatewayErrorMappingTests {
    @Test func noConnectionInTimeIs503AndASlowUpstreamIs504() {
        let cases: [(HTTPClientError, GatewayErrorCode)] = [
            (.poolWaitTimeout, .serviceUnavailable),
            (.poolExhausted, .serviceUnavailable),
            (.shutDown, .serviceUnavailable),
            (.responseTimeout, .gatewayTimeout),
            (.responseBodyTimeout, .gatewayTimeout),
            (.connectTimeout, .gatewayTimeout),
            (.requestBodyFailed(reason: "x"), .badGateway),
            (.connectionClosed(responseStarted: false), .badGateway)
        ]
        for (error, expected) in cases {
            #expect(GatewayErrorMapping.code(for: MoyaError.underlying(error, nil)) == expected, "\(error)")
        }
    }
}
