import HTTPWire
import Moya
import NetCore
import Testing

@testable import Gateway

/// ``CannedStubAnswer``: which stubs are answered from answers made once, and that those answers are the stub's.
@Suite struct CannedStubAnswerTests {
    private static func provider(_ upstream: String, group: EventLoopGroup, logsExchanges: Bool = false) throws
        -> UpstreamProvider
    {
        let loaded = try config(
            """
            upstreams:
              u: \(upstream)
            routes:
              - { name: r, match: { path: /r }, upstream: u }
            """)
        let config = try #require(loaded.upstreams.first)
        return UpstreamProvider(
            upstream: config, group: group, exchangeLogger: logsExchanges ? NetworkLoggerPlugin() : nil,
            retries: false)
    }

    @Test func aPlainStubIsCannedAndOneThatMoyaCouldAnswerOtherwiseIsNot() throws {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        #expect(try Self.provider("{ stub: { status: 200, body: ok } }", group: group).cannedAnswer != nil)
        #expect(
            try Self.provider("{ stub: { status: 503, error_rate: 0.1 } }", group: group).cannedAnswer != nil,
            "no validation: every status is an answer")
        #expect(
            try Self.provider("{ validation: success, stub: { status: 204 } }", group: group).cannedAnswer != nil)
        let notCanned = [
            "{ stub: { delay: 5ms } }",
            "{ stub: { latency: { distribution: uniform, min: 1ms, max: 2ms } } }",
            "{ stub: { seed: 7 } }",
            "{ stub: { responses: [{ match: { path: /a }, status: 201 }] } }",
            "{ stub: { body: '{{uuid}}' } }",
            "{ access_token: { type: bearer, token: t }, stub: { status: 200 } }",
            "{ credentials: { user: u, password: p }, stub: { status: 200 } }",
            "{ validation: success, stub: { status: 404 } }",
            "{ validation: success, stub: { status: 200, error_rate: 0.5, error_status: 503 } }",
            "{ validation: success_and_redirect, stub: { status: 200, error_rate: 0.5 } }"
        ]
        for upstream in notCanned {
            #expect(try Self.provider(upstream, group: group).cannedAnswer == nil, "\(upstream)")
        }
        #expect(
            try Self.provider("{ stub: { status: 200 } }", group: group, logsExchanges: true).cannedAnswer == nil,
            "the exchange logger reads every stubbed exchange")
    }

    @Test func theAnswerIsTheStubsWithTheRequestsID() throws {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        let canned = try #require(
            try Self.provider(
                "{ stub: { status: 201, headers: { Content-Type: application/json, X-Stub: yes }, body: '{}' } }",
                group: group
            ).cannedAnswer)
        let response = canned.response(requestID: "req-1")
        #expect(response.head.status == 201)
        #expect(response.head.headers.first(name: "Content-Type") == "application/json")
        #expect(response.head.headers.first(name: "X-Stub") == "yes")
        #expect(response.requestID == "req-1")
        #expect(
            response.head.headers.first(name: "X-Request-Id") == nil,
            "the id goes beside the shared fields, which the connection writes before it")
        guard case .bytes(let body) = response.body else {
            Issue.record("a canned answer's body is bytes")
            return
        }
        #expect(body == Array("{}".utf8))
        #expect(
            canned.response(requestID: "req-2").requestID == "req-2",
            "each answer has its own request's id; the canned headers are not changed")

        let failing = try #require(
            try Self.provider(
                "{ stub: { status: 200, headers: { X-Stub: yes }, body: fine, error_rate: 1, error_status: 503 } }",
                group: group
            ).cannedAnswer)
        let error = failing.response(requestID: "req-3")
        #expect(error.head.status == 503)
        #expect(error.head.headers.first(name: "X-Stub") == "yes")
        #expect(error.requestID == "req-3")
        guard case .bytes(let errorBody) = error.body else {
            Issue.record("a canned answer's body is bytes")
            return
        }
        #expect(errorBody.isEmpty, "an injected error has the stub's headers and no body")
    }
}
