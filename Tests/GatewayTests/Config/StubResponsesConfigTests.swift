import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// `stub.responses`, `sequence`, `faults`, `template` and `seed` (issue 39): what loads, what is inherited, and every
/// problem reported as `file:line: key.path: reason`.
@Suite struct StubResponsesConfigTests {
    @Test func responsesLoadWithTheirMatchesAndInheritance() throws {
        let loaded = try config(
            """
            upstreams:
              users:
                stub:
                  seed: 42
                  headers: { Content-Type: application/json, X-Stub: users }
                  latency: { distribution: lognormal, median: 20ms, sigma: 0.5 }
                  faults: [{ type: connection_reset, rate: 0.01 }]
                  responses:
                    - match: { methods: [GET], path_params: "/users/{id}", query: { verbose: "1" }, headers: { X-Tenant: acme } }
                      body: '{"id": "{{path.id}}"}'
                    - match: { methods: POST, path: /users, json: { user.role: admin, count: 2, ok: true, name: "7" } }
                      headers: { X-Stub: created }
                      sequence:
                        - { status: 201, body: created }
                        - { status: 409 }
                    - match: { path_prefix: /slow }
                      delay: 50ms
                      faults: { type: slow_body, rate: 0.5, duration: 2s, mode: upstream }
                      template: false
                      body: "{{not a template}}"
            routes:
              - { name: r, match: { path_prefix: /api }, upstream: users }
            """)
        let stub = try #require(loaded.upstream(named: "users")?.stub)
        #expect(stub.seed == 42)
        #expect(!stub.hasDefault, "responses without the stub's own status or body: no default answer")
        #expect(stub.responses.count == 3)

        let first = stub.responses[0]
        #expect(first.match.methods == [.get])
        #expect(first.match.pathParams == "/users/{id}")
        #expect(first.match.query == [StubNameValue(name: "verbose", value: "1")])
        #expect(first.match.headers == [StubNameValue(name: "X-Tenant", value: "acme")])
        #expect(first.answers.count == 1 && !first.isSequence)
        let answer = first.answers[0]
        #expect(answer.status == 200)
        #expect(answer.headers.first(name: "X-Stub") == "users", "headers are inherited from the stub")
        #expect(answer.latency == .lognormal(median: .milliseconds(20), sigma: 0.5, min: nil, max: nil))
        #expect(answer.faults == [StubFaultConfig(kind: .connectionReset, rate: 0.01)])
        #expect(
            answer.bodyTemplate?.parts == [
                .literal(Array("{\"id\": \"".utf8)), .pathParameter(0), .literal(Array("\"}".utf8))
            ])
        #expect(answer.bodyTemplate?.escaping == .json, "Content-Type: application/json escapes as JSON")

        let second = stub.responses[1]
        #expect(second.isSequence && second.answers.map(\.status) == [201, 409])
        #expect(second.answers.map { $0.headers.first(name: "X-Stub") } == ["created", "created"])
        #expect(second.answers[1].body.isEmpty)
        #expect(second.match.methods == [.post], "a single method is accepted")
        #expect(
            second.match.json == [
                StubJSONField(path: ["user", "role"], value: .string("admin")),
                StubJSONField(path: ["count"], value: .number(2)),
                StubJSONField(path: ["ok"], value: .bool(true)),
                StubJSONField(path: ["name"], value: .string("7"))
            ])

        let third = stub.responses[2]
        #expect(
            third.answers[0].delay == .milliseconds(50) && third.answers[0].latency == nil,
            "delay replaces the inherited latency")
        #expect(
            third.answers[0].faults == [
                StubFaultConfig(kind: .slowBody, rate: 0.5, mode: .upstream, duration: .seconds(2))
            ])
        #expect(third.answers[0].bodyTemplate == nil, "template: false sends the braces as they are")
    }

    @Test func aStubWithItsOwnBodyKeepsItsDefaultAnswer() throws {
        let loaded = try config(
            """
            upstreams:
              s:
                stub:
                  status: 200
                  body: "default {{request_id}}"
                  headers: { X-Echo: "{{header.X-In}}" }
                  responses:
                    - match: { path: /a }
                      body: a
            routes:
              - { name: r, match: { path_prefix: / }, upstream: s }
            """)
        let stub = try #require(loaded.upstream(named: "s")?.stub)
        #expect(stub.hasDefault)
        #expect(stub.bodyTemplate?.parts.contains(.requestID) == true)
        #expect(stub.bodyTemplate?.escaping == StubTemplate.Escaping.none, "not JSON: values go as they are")
        #expect(stub.headerTemplates.map(\.index) == [0])
        #expect(stub.headerTemplates.first?.template.escaping == .header)
        #expect(stub.responses[0].answers[0].body == Array("a".utf8), "a response does not inherit the default body")
    }

    @Test func everyProblemIsReportedWithItsLineAndPath() {
        let text = """
            clients:
              api_keys: { keys: { web: k1 } }
            upstreams:
              s:
                stub:
                  body: "{{path.id}} {{nope}}"
                  faults: [{ type: explode, rate: 2 }, { type: slow_body, rate: 0.1 }, { type: connection_reset, rate: 0.1, duration: 1s, mode: sideways }]
                  responses:
                    - match: { path_params: "/users/{id}" }
                      body: "{{path.name}}"
                      headers: { X-Bad: "{{header.X-Api-Key}}" }
                    - match: { path: /a, path_prefix: /b, colour: red, methods: [get], headers: { X-Api-Key: k } }
                      body_file: missing.json
                    - sequence: []
                    - body: "{{random_int 9 1}} {{uuid x}} {{ unterminated"
                    - faults: [{ type: connection_reset, rate: 0.6 }]
                      error_rate: 0.6
              t:
                stub: { body: "{{now}}", faults: [{ type: empty_response, rate: 0.5 }] }
            routes:
              - { name: r, match: { path_prefix: /s }, upstream: s }
              - { name: t, match: { path_prefix: /t }, upstream: t, coalesce: true }
            """
        #expect(
            problems(text) == [
                "conf/gw.yaml:6: upstreams.s.stub.body: template uses {{path.id}}, but the response's match has no path_params",
                "conf/gw.yaml:7: upstreams.s.stub.faults[0].type: invalid fault type 'explode' (connection_reset, empty_response, malformed_response, truncated_body, slow_body)",
                "conf/gw.yaml:7: upstreams.s.stub.faults[0].rate: must be between 0.0 and 1.0",
                "conf/gw.yaml:7: upstreams.s.stub.faults[1].duration: required key is missing for slow_body",
                "conf/gw.yaml:7: upstreams.s.stub.faults[2].mode: invalid mode 'sideways' (client or upstream)",
                "conf/gw.yaml:7: upstreams.s.stub.faults[2].duration: only slow_body takes a duration",
                "conf/gw.yaml:10: upstreams.s.stub.responses[0].body: template uses {{path.name}}, but match.path_params defines {id}",
                "conf/gw.yaml:11: upstreams.s.stub.responses[0].headers.X-Bad: {{header.X-Api-Key}}: the API-key header (clients.api_keys.header) never reaches an upstream",
                "conf/gw.yaml:12: upstreams.s.stub.responses[1].match.colour: unknown key (expected one of: methods, path, path_prefix, path_params, query, headers, json)",
                "conf/gw.yaml:12: upstreams.s.stub.responses[1].match: use only one of path, path_prefix and path_params (found path, path_prefix)",
                "conf/gw.yaml:12: upstreams.s.stub.responses[1].match.methods[0]: invalid method 'get' (methods are case-sensitive upper-case tokens, e.g. GET)",
                "conf/gw.yaml:12: upstreams.s.stub.responses[1].match.headers.X-Api-Key: the API-key header (clients.api_keys.header) never reaches an upstream",
                "conf/gw.yaml:13: upstreams.s.stub.responses[1].body_file: cannot read the file conf/missing.json",
                "conf/gw.yaml:14: upstreams.s.stub.responses[2].sequence: expected a list of one or more answers",
                "conf/gw.yaml:15: upstreams.s.stub.responses[3].body: use {{random_int LOW HIGH}} with two integers, LOW not above HIGH",
                "conf/gw.yaml:16: upstreams.s.stub.responses[4].faults: the fault rates and error_rate add up to 1.2, more than 1",
                "conf/gw.yaml:22: routes[1].coalesce: a coalesced route shares one answer among its callers, so it cannot use a stub with faults that act on the client's connection (upstreams.t.stub.faults); give them mode: upstream, or set coalesce: false"
            ])
    }

    @Test func templateErrorsNameTheVariable() {
        func problem(_ body: String) -> [String] {
            problems(
                """
                upstreams:
                  s: { stub: { body: '\(body)' } }
                routes:
                  - { name: r, match: { path: /x }, upstream: s }
                """)
        }
        let known = "path.NAME, query.NAME, header.NAME, request_id, method, path, now, uuid, random_int LOW HIGH"
        #expect(
            problem("{{nope}}") == [
                "conf/gw.yaml:2: upstreams.s.stub.body: unknown template variable 'nope' (variables: \(known); set template: false to send braces as they are)"
            ])
        #expect(
            problem("{{cookie.x}}") == [
                "conf/gw.yaml:2: upstreams.s.stub.body: unknown template variable 'cookie.x' (variables: \(known); set template: false to send braces as they are)"
            ])
        #expect(
            problem("{{}}") == ["conf/gw.yaml:2: upstreams.s.stub.body: empty '{{}}' in template (variables: \(known))"]
        )
        #expect(
            problem("{{uuid 1}}") == [
                "conf/gw.yaml:2: upstreams.s.stub.body: template variable 'uuid' takes no arguments"
            ])
        #expect(
            problem("{{header.bad name}}") == [
                "conf/gw.yaml:2: upstreams.s.stub.body: template variable 'header.bad' takes no arguments"
            ])
        #expect(
            problem("{{random_int 1}}") == [
                "conf/gw.yaml:2: upstreams.s.stub.body: use {{random_int LOW HIGH}} with two integers, LOW not above HIGH"
            ])
        #expect(problem("a {{ query.page }} b {{method}} {{path}}").isEmpty, "spaces inside the braces are allowed")
        #expect(problem("{ single } braces } are text").isEmpty)
    }

    @Test func aBodyFileIsReadAndTemplatedLikeABody() throws {
        let loaded = try config(
            """
            upstreams:
              s:
                stub:
                  responses:
                    - { match: { path_params: "/u/{id}" }, body_file: user.json, headers: { Content-Type: application/problem+json } }
                    - { match: { path: /raw }, body_file: user.json, template: false }
            routes:
              - { name: r, match: { path_prefix: / }, upstream: s }
            """, files: ["conf/user.json": "{\"id\": \"{{path.id}}\"}"])
        let stub = try #require(loaded.upstream(named: "s")?.stub)
        #expect(stub.responses[0].answers[0].bodyFile == "conf/user.json")
        #expect(stub.responses[0].answers[0].bodyTemplate?.escaping == .json, "+json is JSON too")
        #expect(stub.responses[1].answers[0].bodyTemplate == nil)
    }

    @Test func upstreamModeFaultsMayBeCoalescedAndAStubMayHaveACircuit() throws {
        let loaded = try config(
            """
            upstreams:
              s:
                stub: { faults: [{ type: connection_reset, rate: 0.5, mode: upstream }] }
                circuit_breaker: { failures: 3 }
            routes:
              - { name: r, match: { path: /x }, upstream: s, coalesce: true }
            """)
        #expect(loaded.upstream(named: "s")?.circuitBreaker?.failures == 3)
    }
}
