import Foundation
import HTTPServerCore
import HTTPWire
import Logging
import NetCore
import Prometheus
import TestSupport
import Testing

@testable import Gateway

/// Admission as a table: each case a request (method, target, headers, declared body length, HTTP/2 tunnel) against
/// one loaded configuration, and the decision expected (admitted, or the refusal's code, headers and whether the route
/// was taken). In process, with no listener: the end-to-end tests hold the same answers over the wire.
@Suite struct AdmissionTests {
    static let yaml = """
        clients:
          api_keys:
            header: X-Api-Key
            keys: { alice: key-alice, bob: key-bob }
        upstreams:
          users: { stub: { status: 200, body: "ok" } }
        routes:
          - name: users
            match: { path_prefix: /users, methods: [GET, POST] }
            upstream: users
            max_body_bytes: 1KiB
          - name: admin
            match: { path: /admin }
            upstream: users
            clients: [alice]
          - name: limited
            match: { path: /limited }
            upstream: users
            rate_limit: { requests: 1, per: 1s, burst: 1, by: route }
        """

    /// One request and what admission must decide for it.
    struct Case: CustomStringConvertible, Sendable {
        var method: HTTPMethod = .get
        var target: String
        var key: String? = "key-alice"
        var declaredBodyLength: Int64?
        var http2Tunnel = false
        /// nil: admitted.
        var code: GatewayErrorCode?
        /// The route admission took (nil: none, for a refusal before routing).
        var route: String?
        var headers: [String: String] = [:]
        var closes = false

        var description: String { "\(method.rawValue) \(target) key=\(key ?? "-")" }
    }

    static let cases: [Case] = [
        Case(target: "/users/1", route: "users"),
        Case(method: .head, target: "/users/1", route: "users"),
        Case(
            method: .trace, target: "/users/1", code: .methodNotAllowed,
            headers: ["Allow": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"]),
        Case(
            method: .connect, target: "/users/1", code: .methodNotAllowed,
            headers: ["Allow": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"]),
        Case(target: "/nowhere", code: .notFound),
        Case(method: .delete, target: "/users/1", code: .methodNotAllowed, headers: ["Allow": "GET, HEAD, POST"]),
        Case(target: "/users/%zz", code: .badRequest),
        Case(target: "/users/1", http2Tunnel: true, code: .methodNotAllowed, headers: ["Allow": "GET, HEAD, POST"]),
        Case(target: "/users/1", key: nil, code: .unauthorized, route: "users"),
        Case(target: "/users/1", key: "key-mallory", code: .unauthorized, route: "users"),
        Case(target: "/admin", key: "key-bob", code: .forbidden, route: "admin"),
        Case(target: "/admin", key: "key-alice", route: "admin"),
        Case(method: .post, target: "/users", declaredBodyLength: 1024, route: "users"),
        Case(
            method: .post, target: "/users", declaredBodyLength: 1025, code: .payloadTooLarge, route: "users",
            closes: true)
    ]

    /// A snapshot of ``yaml`` on a one-loop group, with its log in a temporary file.
    final class Harness {
        let group: EventLoopGroup
        let snapshot: GatewaySnapshot

        init() throws {
            let loaded = try config(AdmissionTests.yaml)
            group = try EventLoopGroup(threads: 1)
            let path = ProcessRunner.temporaryDirectory("admission") + "/access.log"
            let sink = try LogSink(destination: .file(path))
            let settings = LogSettings(loaded.logging)
            let telemetry = Telemetry(registry: PrometheusCollectorRegistry(), sink: sink, settings: settings)
            snapshot = GatewaySnapshot(
                config: loaded, group: group, telemetry: telemetry,
                logger: Logger(label: "admission-test") { _ in SwiftLogNoOpLogHandler() })
        }

        deinit { group.shutdown() }

        func request(
            _ method: HTTPMethod, _ target: String, key: String?, declaredBodyLength: Int64? = nil,
            http2Tunnel: Bool = false
        ) -> HTTPServerRequest {
            var headers: HTTPFields = ["Host": "127.0.0.1"]
            if let key { headers.add(name: "X-Api-Key", value: key) }
            if http2Tunnel {
                headers.add(name: "Connection", value: "Upgrade")
                headers.add(name: "Upgrade", value: "websocket")
            }
            let head = HTTPRequestHead(
                method: method, target: target, version: http2Tunnel ? .http2 : .http1_1,
                headers: headers)
            var request = HTTPServerRequest(
                head: head, body: .complete([]), declaredBodyLength: declaredBodyLength,
                remoteAddress: SocketAddress(numericHost: "192.0.2.7", port: 50000),
                isTLS: false, loop: group.loops[0])
            if http2Tunnel { request.upgradeInput = .complete([]) }
            return request
        }
    }

    @Test(arguments: cases) func decides(_ expected: Case) throws {
        let harness = try Harness()
        let request = harness.request(
            expected.method, expected.target, key: expected.key,
            declaredBodyLength: expected.declaredBodyLength, http2Tunnel: expected.http2Tunnel)
        switch Admission.decide(request, clientAddress: "192.0.2.7", snapshot: harness.snapshot, now: { 0 }) {
        case .admitted(let routed, let upstream):
            #expect(expected.code == nil, "admitted, expected \(expected.code.map { "\($0)" } ?? "")")
            #expect(routed.route.name == expected.route)
            #expect(upstream.upstream.name == "users")
            #expect(routed.clientName == expected.key.map { String($0.dropFirst("key-".count)) })
        case .refused(let refusal, let routed):
            #expect(refusal.code == expected.code)
            #expect(refusal.headers == expected.headers)
            #expect(refusal.closesConnection == expected.closes)
            #expect(routed.route.name == expected.route)
        case .unrouted(let refusal):
            #expect(refusal.code == expected.code)
            #expect(refusal.headers == expected.headers)
            #expect(refusal.closesConnection == expected.closes)
            #expect(expected.route == nil, "not routed, expected route \(expected.route ?? "")")
        }
    }

    /// A route-wide rate limit of one call a second: the first call is admitted, the second at the same instant is
    /// refused with `Retry-After`, and one a second later is admitted again. The refused call has its route (the
    /// access log names it).
    @Test func theRateLimitRefusesPastItsBudgetAndAdmitsOnceItRefills() throws {
        let harness = try Harness()
        func decide(at seconds: UInt64) -> Admission.Decision {
            Admission.decide(
                harness.request(.get, "/limited", key: "key-bob"), clientAddress: "192.0.2.7",
                snapshot: harness.snapshot, now: { seconds * 1_000_000_000 })
        }
        guard case .admitted(let first, _) = decide(at: 100) else {
            Issue.record("the first call is admitted")
            return
        }
        #expect(first.route.name == "limited" && first.clientName == "bob")
        guard case .refused(let refusal, let routed) = decide(at: 100) else {
            Issue.record("the second call at the same instant is refused")
            return
        }
        #expect(refusal.code == .tooManyRequests && refusal.headers == ["Retry-After": "1"])
        #expect(routed.route.name == "limited")
        guard case .admitted = decide(at: 101) else {
            Issue.record("a call a second later is admitted")
            return
        }
    }
}
