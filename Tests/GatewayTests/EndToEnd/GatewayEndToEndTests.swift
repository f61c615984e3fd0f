import Foundation
import HTTPClientCore
import HTTPWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real `moya-gateway` binary against real upstream processes over loopback.
@Suite(.serialized) struct GatewayEndToEndTests {
    static func proxyConfig(upstreamPort: Int, extraRoutes: String = "", extraUpstreams: String = "") -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          limits: { drain_timeout: 5s }
        admin:
          listen: "127.0.0.1:ADMIN"
        upstreams:
          api:
            base_url: http://127.0.0.1:\(upstreamPort)/v1
            access_token: { type: bearer, token: "${API_TOKEN}" }
            timeout: { connect: 1s, response: 500ms }
          open:
            base_url: http://127.0.0.1:\(upstreamPort)
          refused:
            base_url: http://127.0.0.1:1
          stubbed:
            stub: { status: 201, headers: { Content-Type: text/plain }, body: "from stub", delay: 200ms }
        \(extraUpstreams)
        routes:
          - name: api
            match: { path_prefix: /api, methods: [GET, POST] }
            upstream: api
            rewrite: { strip_prefix: /api }
            coalesce: true
          - name: open
            match: { path_prefix: /open }
            upstream: open
          - name: refused
            match: { path: /refused }
            upstream: refused
          - name: stubbed
            match: { path: /stubbed }
            upstream: stubbed
        \(extraRoutes)
        """
    }

    static func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func routesRewritesInjectsTheTokenAndKeepsSecretsOutOfLogs() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port),
            environment: ["API_TOKEN": "UPSTREAM_CANARY_42"])
        let client = HTTPClient()
        let response = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/users/7?x=1",
                headers: [
                    "Authorization": "Bearer CLIENT_CANARY", "Cookie": "s=COOKIE_CANARY", "X-Request-Id": "req-123",
                    "Connection": "X-Hop", "X-Hop": "should-not-pass", "Keep-Alive": "timeout=5"
                ]))
        #expect(response.status == 200)
        let received = try #require(upstream.requests.last)
        #expect(received.head.target == "/v1/users/7?x=1")
        #expect(
            received.head.headers["Authorization"] == ["Bearer UPSTREAM_CANARY_42"],
            "client Authorization is replaced, never both")
        #expect(received.head.headers.first(name: "X-Request-Id") == "req-123")
        #expect(received.head.headers.first(name: "X-Forwarded-For") == "127.0.0.1")
        #expect(received.head.headers.first(name: "X-Forwarded-Proto") == "http")
        #expect(received.head.headers.first(name: "X-Forwarded-Host") == "127.0.0.1:\(gateway.port)")
        #expect(received.head.headers.first(name: "Via") == "1.1 moya-gateway")
        #expect(!received.head.headers.contains(name: "X-Hop"))
        #expect(!received.head.headers.contains(name: "Keep-Alive"))
        #expect(response.headers.first(name: "X-Request-Id") == "req-123")
        // The echo upstream reflects the token it got in its body; the gateway adds it nowhere else.
        let echoed = Self.text(response)
        #expect(echoed.contains("Authorization: Bearer UPSTREAM_CANARY_42\n"))
        #expect(echoed.components(separatedBy: "UPSTREAM_CANARY").count == 2, "\(echoed)")
        #expect(!response.headers.contains { $0.value.contains("CANARY") })
        gateway.stop()
        let logs = gateway.stdout + gateway.stderr
        for canary in ["UPSTREAM_CANARY", "CLIENT_CANARY", "COOKIE_CANARY"] {
            #expect(!logs.contains(canary), "\(canary) leaked into logs")
        }
        let line = try #require(gateway.accessLog.first)
        #expect(line["route"] as? String == "api")
        #expect(line["upstream_path"] as? String == "/v1/users/7?x=1")
        #expect(line["status"] as? Int == 200)
        #expect(line["request_id"] as? String == "req-123")
    }

    /// Both directions of the proxy's header rules: a client cannot strip the injected token by listing
    /// `Authorization` in `Connection`; `Via` is appended to, in the client's protocol; a generated request id goes
    /// upstream and back. (The response direction: `GatewayUpstreamFaultTests`, whose upstream writes raw heads.)
    @Test func headerRulesHoldInBothDirections() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port),
            environment: ["API_TOKEN": "UPSTREAM_CANARY_7"])
        let client = HTTPClient()
        let echoed = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/echo",
                headers: [
                    "Authorization": "Bearer CLIENT", "Connection": "Authorization, X-Hop", "X-Hop": "1",
                    "Via": "1.0 edge"
                ]))
        #expect(echoed.status == 200)
        let generatedID = try #require(echoed.headers.first(name: "X-Request-Id"))
        #expect(!generatedID.isEmpty)
        let received = try #require(upstream.requests.last)
        #expect(
            received.head.headers["Authorization"] == ["Bearer UPSTREAM_CANARY_7"],
            "the injected token survives `Connection`")
        #expect(!received.head.headers.contains(name: "X-Hop"))
        #expect(received.head.headers["Via"] == ["1.0 edge, 1.1 moya-gateway"])
        #expect(received.head.headers["X-Request-Id"] == [generatedID], "the generated id goes upstream too")

        // An HTTP/2 client (h2c with prior knowledge): `Via` says so upstream.
        var h2 = HTTPClient.Configuration()
        h2.http2 = .always
        let h2Response = try await HTTPClient(configuration: h2).execute(
            HTTPClientRequest(url: "\(gateway.url)/api/echo"))
        #expect(h2Response.head.version == .http2)
        #expect(upstream.requests.last?.head.headers["Via"] == ["2 moya-gateway"])
        gateway.stop()
    }

    /// H1-39: an `Upgrade` (h2c with `HTTP2-Settings`, or a WebSocket handshake) is neither taken up by the gateway
    /// nor passed on: the request is answered as a plain one, and the upstream sees none of the upgrade's fields.
    @Test func upgradeRequestsAreAnsweredPlainlyAndNeverForwarded() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port),
            environment: ["API_TOKEN": "t"])
        let upgrades = [
            "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n",
            "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        ]
        for (index, upgrade) in upgrades.enumerated() {
            let client = try RawClient(port: gateway.port)
            client.send("GET /api/echo?u=\(index) HTTP/1.1\r\nHost: g\r\n\(upgrade)\r\n")
            let answer = client.read(until: { $0.contains("\r\n\r\n") && $0.contains("u=\(index)") }, timeout: 3)
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(200))")
            #expect(!answer.lowercased().contains("upgrade"), "\(answer)")
            // The connection goes on as HTTP/1.1.
            client.send("GET /api/echo?after=\(index) HTTP/1.1\r\nHost: g\r\nConnection: close\r\n\r\n")
            let after = String(decoding: client.readAll(timeout: 3).bytes, as: UTF8.self)
            #expect(after.contains("HTTP/1.1 200 ") && after.contains("after=\(index)"), "\(after.prefix(200))")
        }
        let upgraded = upstream.requests.filter { $0.head.target.contains("u=") }
        #expect(upgraded.count == 2)
        for received in upgraded {
            for name in ["Upgrade", "HTTP2-Settings", "Connection"] {
                #expect(!received.head.headers.contains(name: name), "\(name) forwarded: \(received.head.headers)")
            }
        }
        gateway.stop()
    }

    @Test func coalescesConcurrentIdenticalGetsButNeverAcrossIdentitiesOrForPost() async throws {
        let upstream = try await RecordingUpstream.start()
        #expect((try? RawClient(port: upstream.port)) != nil, "upstream listening after start")
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port),
            environment: ["API_TOKEN": "t"])
        #expect((try? RawClient(port: upstream.port)) != nil, "upstream listening after the gateway started")
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerOrigin = 200
        let client = HTTPClient(configuration: configuration)
        let base = gateway.url
        func burst(_ count: Int, method: HTTPMethod = .get, identity: @escaping @Sendable (Int) -> String?) async
            -> [Int]
        {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<count {
                    group.addTask {
                        var headers = HTTPFields()
                        if let id = identity(index) { headers.add(name: "Cookie", value: "session=\(id)") }
                        let request = try? HTTPClientRequest(
                            method: method, url: "\(base)/api/slow?ms=300&k=\(method)", headers: headers)
                        return (try? await client.execute(request!))?.status ?? -1
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect((try? RawClient(port: upstream.port)) != nil, "upstream listening before the gateway starts")
        // Warm the connections so the burst arrives inside one upstream call.
        _ = await burst(100) { _ in "warm" }
        upstream.reset()
        let started = ContinuousClock.now
        let statuses = await burst(100) { _ in nil }
        let wall = ContinuousClock.now - started
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(upstream.requests.count == 1, "100 identical GETs → 1 upstream hit, got \(upstream.requests.count)")
        #expect(wall < .seconds(5), "the burst waits for one upstream call, not a queue of 100")
        upstream.reset()
        _ = await burst(50) { $0 % 2 == 0 ? "alice" : "bob" }
        #expect(upstream.requests.count == 2, "two identities → 2 hits, got \(upstream.requests.count)")
        upstream.reset()
        _ = await burst(10, method: .post) { _ in nil }
        #expect(upstream.requests.count == 10, "POST is never coalesced")
        gateway.stop()
        let roles = gateway.accessLog.compactMap { $0["coalesced"] as? String }
        #expect(roles.contains("leader") && roles.contains("follower"))
    }

    /// The rest of the coalescing key, end to end: parameter order does not matter (the shared call sends them
    /// sorted), HEAD coalesces like GET, a `coalesce_vary` header splits flights, and so does each API-key client.
    @Test func coalescingKeySortsTheQueryAndSplitsByVaryHeadersAndAPIKeyClients() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                clients: { api_keys: { header: X-Api-Key, keys: { alice: "${ALICE_KEY}", bob: "${BOB_KEY}" } } }
                upstreams:
                  up: { base_url: "http://127.0.0.1:\(upstream.port)", pool: { max_connections: 200 } }
                routes:
                  - { name: shared, match: { path_prefix: /shared }, upstream: up, coalesce: true, coalesce_vary: [Accept] }
                """, environment: ["ALICE_KEY": "alice-secret", "BOB_KEY": "bob-secret"])
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerOrigin = 200
        let client = HTTPClient(configuration: configuration)
        let base = gateway.url
        func burst(
            _ count: Int, method: HTTPMethod = .get, query: @escaping @Sendable (Int) -> String,
            headers: @escaping @Sendable (Int) -> [(String, String)]
        ) async -> [Int] {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let request = try? HTTPClientRequest(
                            method: method, url: "\(base)/shared/slow?\(query(index))",
                            headers: HTTPFields(headers(index)))
                        return (try? await client.execute(request!))?.status ?? -1
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let alice = [("X-Api-Key", "alice-secret")]
        _ = await burst(60, query: { "warm=\($0)&ms=1" }, headers: { _ in alice })
        upstream.reset()

        var statuses = await burst(
            40, query: { $0 % 2 == 0 ? "ms=300&a=1&b=2" : "b=2&ms=300&a=1" }, headers: { _ in alice })
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(upstream.requests.count == 1, "parameter order does not split a flight, got \(upstream.requests.count)")
        #expect(
            upstream.requests.first?.head.target == "/shared/slow?a=1&b=2&ms=300", "the shared call sends them sorted")
        upstream.reset()

        statuses = await burst(40, method: .head, query: { _ in "ms=300&k=head" }, headers: { _ in alice })
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(upstream.requests.count == 1, "HEAD coalesces, got \(upstream.requests.count)")
        upstream.reset()

        statuses = await burst(40, query: { _ in "ms=300&k=vary" }) { index in
            alice + [("Accept", index % 2 == 0 ? "application/json" : "text/plain")]
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(upstream.requests.count == 2, "two Accept values → 2 hits, got \(upstream.requests.count)")
        upstream.reset()

        // COAL-02: headers that select a variant split flights without being listed in `coalesce_vary`, so no caller
        // gets a range, a 304 or an encoding it did not ask for; callers that send the same values still share.
        let variants: [[(String, String)]] = [
            [], [("Range", "bytes=0-9")], [("If-None-Match", "\"v1\"")],
            [("Accept-Encoding", "gzip")], [("Accept-Language", "de")]
        ]
        statuses = await burst(50, query: { _ in "ms=300&k=variants" }) { index in alice + variants[index % 5] }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(upstream.requests.count == 5, "five variants → 5 hits, got \(upstream.requests.count)")
        for name in ["Range", "If-None-Match", "Accept-Encoding", "Accept-Language"] {
            #expect(
                upstream.requests.filter { $0.head.headers.contains(name: name) }.count == 1, "one call sent \(name)")
        }
        upstream.reset()

        statuses = await burst(40, query: { _ in "ms=300&k=clients" }) { index in
            [("X-Api-Key", index % 2 == 0 ? "alice-secret" : "bob-secret")]
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(upstream.requests.count == 2, "two API-key clients → 2 hits, got \(upstream.requests.count)")
        #expect(
            upstream.requests.allSatisfy { !$0.head.headers.contains(name: "X-Api-Key") }, "the key is never forwarded")
        gateway.stop()
        let sorted = gateway.accessLog.filter { ($0["path"] as? String)?.contains("a=1") == true }
        #expect(sorted.count == 40)
        #expect(sorted.allSatisfy { $0["upstream_path"] as? String == "/shared/slow?a=1&b=2&ms=300" })
        let clients = gateway.accessLog.filter { ($0["path"] as? String)?.contains("k=clients") == true }
        #expect(
            Set(clients.compactMap { $0["client"] as? String }) == ["alice", "bob"], "the client's name, never its key")
        #expect(clients.count == 40 && clients.allSatisfy { $0["client_ip"] as? String == "127.0.0.1" })
        #expect(!gateway.stdout.contains("alice-secret") && !gateway.stdout.contains("bob-secret"))
    }

    /// Requests the server refuses before routing get the gateway's error body too, with a request id (the client's
    /// when its head was read), and an access-log line each.
    @Test func requestsTheServerRefusesGetJSONErrorsWithRequestIDsAndAreLogged() async throws {
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: 1)
                .replacingOccurrences(
                    of: "limits: { drain_timeout: 5s }", with: "limits: { drain_timeout: 5s, max_body_bytes: 1KiB }"),
            environment: ["API_TOKEN": "t"])
        func exchange(_ raw: String) -> String {
            guard let client = try? RawClient(port: gateway.port) else { return "" }
            client.send(raw)
            return String(decoding: client.readAll(timeout: 5).bytes, as: UTF8.self)
        }
        func body(_ reply: String) -> String { reply.components(separatedBy: "\r\n\r\n").last ?? "" }
        let malformed = exchange("GET /open HTTP/1.1\r\nHost: t\r\nNo colon here\r\n\r\n")
        #expect(malformed.hasPrefix("HTTP/1.1 400"), "\(malformed)")
        #expect(body(malformed).hasPrefix("{\"error\":\"bad_request\",\"request_id\":\""), "\(malformed)")
        #expect(malformed.contains("X-Request-Id: "))
        let manyHeaders = (0..<120).map { "X-H\($0): v\r\n" }.joined()
        let tooMany = exchange("GET /open HTTP/1.1\r\nHost: t\r\n\(manyHeaders)\r\n")
        #expect(tooMany.hasPrefix("HTTP/1.1 431"), "\(tooMany)")
        #expect(body(tooMany).hasPrefix("{\"error\":\"bad_request\",\"request_id\":\""))
        let expectation = exchange("GET /open/x HTTP/1.1\r\nHost: t\r\nX-Request-Id: rej-417\r\nExpect: teapot\r\n\r\n")
        #expect(expectation.hasPrefix("HTTP/1.1 417"), "\(expectation)")
        #expect(body(expectation) == "{\"error\":\"bad_request\",\"request_id\":\"rej-417\"}")
        // nghttp, not curl: the answer comes while the upload is still being sent and ends with RST_STREAM NO_ERROR,
        // which curl before 8.11 reports as an error (92) when it arrives mid-upload.
        let upload = ProcessRunner.temporaryDirectory("rejected") + "/body"
        try Data(repeating: 0x78, count: 2048).write(to: URL(fileURLWithPath: upload))
        let h2 = try ProcessRunner.run(
            "nghttp", ["-v", "-H", "x-request-id: rej-413", "-d", upload, "\(gateway.url)/open/upload"])
        #expect(h2.stdout.contains(":status: 413"), "\(h2.stdout)")
        #expect(h2.stdout.contains("{\"error\":\"payload_too_large\",\"request_id\":\"rej-413\"}"), "\(h2.stdout)")
        gateway.stop()
        let lines = gateway.accessLog
        #expect(lines.map { $0["status"] as? Int ?? 0 } == [400, 431, 417, 413], "\(lines)")
        #expect(lines.allSatisfy { $0["route"] is NSNull && ($0["request_id"] as? String)?.isEmpty == false })
        #expect(lines.allSatisfy { $0["client_ip"] as? String == "127.0.0.1" }, "refused callers are logged by address")
        #expect(lines[2]["path"] as? String == "/open/x" && lines[2]["request_id"] as? String == "rej-417")
        #expect(lines[0]["path"] as? String == "-", "the head was not read")
    }

    @Test func stubsAnswerWithTheirDelayWithoutTheNetwork() async throws {
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: 1), environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        let started = ContinuousClock.now
        let response = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stubbed"))
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 201)
        #expect(Self.text(response) == "from stub")
        #expect(elapsed >= .milliseconds(190))
        gateway.stop()
        #expect(gateway.accessLog.first?["stubbed"] as? Bool == true)
    }

    /// A load-test stub with a log-normal latency: every answer waits at least the distribution's `min`, and the
    /// waits spread (each request samples its own), none past `max` by more than scheduling.
    @Test func aLognormalStubSpreadsItsDelaysWithinItsBounds() async throws {
        let tail =
            "  tail: { stub: { body: t, latency: { distribution: lognormal, median: 40ms, sigma: 0.6, min: 20ms, max: 200ms } } }"
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(
                upstreamPort: 1, extraRoutes: "  - { name: tail, match: { path: /tail }, upstream: tail }",
                extraUpstreams: tail),
            environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        let url = "\(gateway.url)/tail"
        let waits = try await withThrowingTaskGroup(of: Duration.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    let started = ContinuousClock.now
                    let response = try await client.execute(HTTPClientRequest(url: url))
                    #expect(response.status == 200)
                    return ContinuousClock.now - started
                }
            }
            return try await group.reduce(into: [Duration]()) { $0.append($1) }.sorted()
        }
        #expect(waits.first! >= .milliseconds(19), "the shortest wait \(waits.first!)")
        #expect(waits.last! - waits.first! >= .milliseconds(20), "the waits spread: \(waits.first!)–\(waits.last!)")
        #expect(waits.last! < .seconds(2))
        gateway.stop()
        #expect(gateway.accessLog.filter { $0["route"] as? String == "tail" }.count == 40)
    }

    @Test func errorsAreJSONWithRequestIDs() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port), environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        let notFound = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/nowhere"))
        #expect(notFound.status == 404)
        #expect(Self.text(notFound).hasPrefix("{\"error\":\"not_found\",\"request_id\":\""))
        let wrongMethod = try await client.execute(HTTPClientRequest(method: .delete, url: "\(gateway.url)/api/x"))
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers.first(name: "Allow") == "GET, HEAD, POST")
        let refused = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/refused"))
        #expect(refused.status == 502)
        #expect(Self.text(refused).contains("\"error\":\"bad_gateway\""))
        let started = ContinuousClock.now
        let slow = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/slow?ms=3000"))
        #expect(slow.status == 504)
        #expect(ContinuousClock.now - started < .milliseconds(2000), "response timeout is 500ms")
        let traversal = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/%2e%2e/admin"))
        #expect([400, 404].contains(traversal.status), "normalised out of the prefix: refused, never forwarded")
        #expect(upstream.requests.allSatisfy { $0.head.target.hasPrefix("/v1/") })
        let trace = try await client.execute(HTTPClientRequest(method: .trace, url: "\(gateway.url)/api/x"))
        #expect(trace.status == 405)
        gateway.stop()
    }

    /// The gateway's own routing errors are answered at once, without a task: a client that half-closes after its
    /// request (which abandons a proxied one, as nginx does) still gets its 404, 400 or 405, and a request pipelined
    /// behind an erroneous one with a body is served too. With no instant stub in the configuration (this one has
    /// none without latency) as well as with one.
    @Test func routingErrorsReachAClientThatHalfCloses() async throws {
        let upstream = try await RecordingUpstream.start()
        for instantStub in ["", "  instant: { stub: { status: 200, body: hi } }"] {
            let route = instantStub.isEmpty ? "" : "  - { name: instant, match: { path: /instant }, upstream: instant }"
            let config = Self.proxyConfig(upstreamPort: upstream.port, extraRoutes: route, extraUpstreams: instantStub)
            let gateway = try await GatewayProcess(config: config, environment: ["API_TOKEN": "t"])
            func exchange(_ request: String) -> String {
                guard let client = try? RawClient(port: gateway.port) else { return "" }
                client.send(request)
                client.shutdownWrite()
                return String(decoding: client.readAll(timeout: 3).bytes, as: UTF8.self)
            }
            let notFound = exchange("GET /nowhere HTTP/1.1\r\nHost: g\r\nX-Request-Id: half-404\r\n\r\n")
            #expect(
                notFound.hasPrefix("HTTP/1.1 404 ") && notFound.contains("\"request_id\":\"half-404\""),
                "\(notFound)")
            let encodedSlash = exchange("GET /open/a%2Fb HTTP/1.1\r\nHost: g\r\n\r\n")
            #expect(encodedSlash.hasPrefix("HTTP/1.1 400 "), "\(encodedSlash)")
            let pipelined = exchange(
                "DELETE /api/x HTTP/1.1\r\nHost: g\r\nContent-Length: 5\r\n\r\nhello"
                    + "GET /nowhere HTTP/1.1\r\nHost: g\r\nConnection: close\r\n\r\n")
            #expect(
                pipelined.hasPrefix("HTTP/1.1 405 ") && pipelined.contains("Allow: GET, HEAD, POST"),
                "\(pipelined)")
            #expect(pipelined.components(separatedBy: "HTTP/1.1 404 ").count == 2, "\(pipelined)")
            if !instantStub.isEmpty {
                #expect(exchange("GET /instant HTTP/1.1\r\nHost: g\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
            }
            #expect(gateway.stop() == 0)
            let statuses = gateway.accessLog.compactMap { $0["status"] as? Int }
            #expect(
                statuses.filter { $0 == 404 }.count == 2 && statuses.contains(400) && statuses.contains(405),
                "\(statuses)")
        }
        #expect(upstream.requests.isEmpty, "nothing reached the upstream")
    }

    /// An upstream that sends its head and then stops mid-body: the upstream's response timeout (the longest wait for
    /// the next bytes) or the route's deadline (the whole request, body included) ends it with a 504.
    @Test func anUpstreamThatStallsMidBodyIsCutByTheResponseTimeoutAndTheRouteDeadline() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(
                upstreamPort: upstream.port,
                extraRoutes: """
                      - name: deadline
                        match: { path_prefix: /deadline }
                        upstream: open
                        rewrite: { strip_prefix: /deadline }
                        timeout: 1s
                    """), environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        var started = ContinuousClock.now
        let byResponseTimeout = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/stall"))
        #expect(byResponseTimeout.status == 504)
        #expect(ContinuousClock.now - started < .milliseconds(2500), "the api upstream's response timeout is 500 ms")
        started = ContinuousClock.now
        let byDeadline = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/deadline/stall"))
        #expect(byDeadline.status == 504)
        let waited = ContinuousClock.now - started
        #expect(
            waited >= .milliseconds(900) && waited < .milliseconds(3000), "the route's 1 s deadline, not the upstream")
        #expect(Self.text(byDeadline).contains("\"error\":\"gateway_timeout\""))
        gateway.stop()
        #expect(gateway.accessLog.filter { $0["status"] as? Int == 504 }.count == 2)
    }

    /// A recording upstream behind a gateway whose one route goes to it with `pool: { POOL }`.
    static func narrowPool(_ pool: String) async throws -> (RecordingUpstream, GatewayProcess) {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                \(GatewayProcess.listeners)
                upstreams:
                  narrow:
                    base_url: http://127.0.0.1:\(upstream.port)
                    pool: { \(pool) }
                routes:
                  - { name: narrow, match: { path_prefix: / }, upstream: narrow }
                """)
        return (upstream, gateway)
    }

    @Test func aFullPoolAnswers503AfterMaxWait() async throws {
        let (upstream, gateway) = try await Self.narrowPool("max_connections: 1, max_wait: 300ms")
        let client = HTTPClient()
        let url = gateway.url
        async let slow = client.execute(HTTPClientRequest(url: "\(url)/slow?ms=2000"))
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        let waited = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/fast"))
        let elapsed = ContinuousClock.now - started
        #expect(waited.status == 503)
        #expect(Self.text(waited).contains("\"error\":\"service_unavailable\""))
        #expect(
            elapsed >= .milliseconds(250) && elapsed < .milliseconds(1500), "max_wait, not the slow call: \(elapsed)")
        #expect(try await slow.status == 200, "the call holding the connection completes")
        gateway.stop()
        withExtendedLifetime(upstream) {}
    }

    /// `pool.max_waiting`: past that many requests waiting for the pool (per thread), the next is answered 503 at
    /// once instead of queueing; the ones queued get the connection in turn.
    @Test func aFullWaitQueueAnswers503AtOnce() async throws {
        let (upstream, gateway) = try await Self.narrowPool("max_connections: 1, max_waiting: 1")
        let client = HTTPClient()
        let url = gateway.url
        async let holding = client.execute(HTTPClientRequest(url: "\(url)/slow?ms=800"))
        try await Task.sleep(for: .milliseconds(200))
        async let queued = client.execute(HTTPClientRequest(url: "\(url)/slow?ms=10"))
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        let refused = try await client.execute(HTTPClientRequest(url: "\(url)/fast"))
        #expect(refused.status == 503 && Self.text(refused).contains("\"error\":\"service_unavailable\""))
        #expect(ContinuousClock.now - started < .milliseconds(300), "refused at once, not after the wait")
        #expect(try await holding.status == 200)
        #expect(try await queued.status == 200, "the queued request got the connection in turn")
        #expect(upstream.requests.map { String($0.head.path) } == ["/slow", "/slow"])
        gateway.stop()
        #expect(gateway.accessLog.contains { $0["upstream_error"] as? String == "connection pool exhausted" })
    }

    @Test func apiKeysGate401And403AndAreNeverForwarded() async throws {
        let upstream = try await RecordingUpstream.start()
        let config = """
            server:
              listen: ["127.0.0.1:PORT"]
              threads: 1
            admin:
              listen: "127.0.0.1:ADMIN"
            clients:
              api_keys:
                header: X-Api-Key
                keys: { billing: "${BILLING_KEY}", web: "${WEB_KEY}" }
            upstreams:
              open:
                base_url: http://127.0.0.1:\(upstream.port)
            routes:
              - name: billing-only
                match: { path_prefix: /billing }
                upstream: open
                clients: [billing]
            """
        let gateway = try await GatewayProcess(
            config: config, environment: ["BILLING_KEY": "bk-secret", "WEB_KEY": "wk-secret"])
        let client = HTTPClient()
        let none = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/billing/x", headers: ["X-Request-Id": "k1"]))
        #expect(none.status == 401)
        #expect(Self.text(none) == #"{"error":"unauthorized","request_id":"k1"}"#)
        let unknown = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/billing/x",
                headers: ["X-Api-Key": "nope", "X-Request-Id": "k2"]))
        #expect(unknown.status == 401)
        #expect(Self.text(unknown) == #"{"error":"unauthorized","request_id":"k2"}"#)
        let web = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/billing/x",
                headers: ["X-Api-Key": "wk-secret", "X-Request-Id": "k3"]))
        #expect(web.status == 403)
        #expect(Self.text(web) == #"{"error":"forbidden","request_id":"k3"}"#)
        let billing = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/billing/x", headers: ["X-Api-Key": "bk-secret"]))
        #expect(billing.status == 200)
        #expect(upstream.requests.count == 1)
        #expect(!(upstream.requests.first?.head.headers.contains(name: "X-Api-Key") ?? true))
        // Decided on the event loop with no task, like routing errors: a client that half-closes after its request
        // (which abandons a proxied one) still gets its 401 or 403.
        for (key, status) in [("", "401"), ("X-Api-Key: wk-secret\r\n", "403")] {
            let raw = try RawClient(port: gateway.port)
            raw.send("GET /billing/x HTTP/1.1\r\nHost: g\r\n\(key)\r\n")
            raw.shutdownWrite()
            let answer = String(decoding: raw.readAll(timeout: 3).bytes, as: UTF8.self)
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(answer)")
        }
        gateway.stop()
        #expect(!(gateway.stdout + gateway.stderr).contains("bk-secret"))
    }

    @Test func reloadSwapsRoutesAndABadReloadKeepsTheOldConfig() async throws {
        let upstream = try await RecordingUpstream.start()
        let base = Self.proxyConfig(upstreamPort: upstream.port)
        let gateway = try await GatewayProcess(config: base, environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/extra")).status == 404)
        try gateway.rewriteConfig(base + "\n  - name: extra\n    match: { path: /extra }\n    upstream: stubbed\n")
        gateway.signal(SIGHUP)
        var status = 0
        for _ in 0..<40 {
            status = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/extra")).status
            if status == 201 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(status == 201, "the new route serves within 2 s")
        let metricsURL = "http://127.0.0.1:\(gateway.adminPort)/metrics"
        var metrics = Self.text(try await client.execute(HTTPClientRequest(url: metricsURL)))
        #expect(metrics.contains("moya_gateway_config_reloads_total{result=\"success\"} 1"))
        #expect(metrics.contains("moya_gateway_config_last_reload_successful 1"))
        try gateway.rewriteConfig(base + "\n  - name: broken\n    match: { path: /b }\n    upstream: missing\n")
        gateway.signal(SIGHUP)
        try await Task.sleep(for: .milliseconds(300))
        #expect(
            try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stubbed")).status == 201,
            "old config keeps serving")
        #expect(gateway.process.isRunning)
        // LIFE-04: a rejected reload is visible to monitoring, not only in the log.
        metrics = Self.text(try await client.execute(HTTPClientRequest(url: metricsURL)))
        #expect(metrics.contains("moya_gateway_config_reloads_total{result=\"failure\"} 1"))
        #expect(metrics.contains("moya_gateway_config_last_reload_successful 0"))
        gateway.stop()
        #expect(gateway.stdout.contains("reload rejected"))
        #expect(gateway.stdout.contains("routes[4].upstream"))
    }

    /// A token read from a secret file (`${file:PATH}`, as mounted secrets are) is rotated by SIGHUP: the file is read
    /// again by the reload, which `${ENV}` cannot do for a running process. Neither token reaches the log.
    @Test func aReloadRotatesATokenReadFromASecretFile() async throws {
        let upstream = try await RecordingUpstream.start()
        let directory = ProcessRunner.temporaryDirectory("gateway-secret-file")
        let tokenFile = "\(directory)/token"
        try "first-rotating-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let config = """
            \(GatewayProcess.listeners)
            upstreams:
              api:
                base_url: "http://127.0.0.1:\(upstream.port)"
                access_token: { type: bearer, token: "${file:\(tokenFile)}" }
            routes:
              - { name: api, match: { path_prefix: /api }, upstream: api }
            """
        let gateway = try await GatewayProcess(config: config)
        let client = HTTPClient()
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/a")).status == 200)
        #expect(upstream.requests.last?.head.headers.first(name: "Authorization") == "Bearer first-rotating-token")
        try "second-rotating-token\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        gateway.signal(SIGHUP)
        var seen: String?
        for _ in 0..<40 {
            _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/b"))
            seen = upstream.requests.last?.head.headers.first(name: "Authorization")
            if seen == "Bearer second-rotating-token" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(seen == "Bearer second-rotating-token", "the reload read the file again")
        // A file that cannot be read rejects the reload; the last token keeps serving.
        try FileManager.default.removeItem(atPath: tokenFile)
        gateway.signal(SIGHUP)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/c")).status == 200)
        #expect(upstream.requests.last?.head.headers.first(name: "Authorization") == "Bearer second-rotating-token")
        gateway.stop()
        #expect(gateway.stdout.contains("cannot read the secret file \(tokenFile)"), "\(gateway.stdout)")
        #expect(!(gateway.stdout + gateway.stderr).contains("rotating-token"))
    }

    @Test func sigtermDrainsInFlightRequestsAndExitsZero() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port), environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        let url = "\(gateway.url)/open/slow?ms=400"
        let inFlight = Task { try await client.execute(HTTPClientRequest(url: url)) }
        try await Task.sleep(for: .milliseconds(150))
        gateway.signal(SIGTERM)
        let response = try await inFlight.value
        #expect(response.status == 200)
        #expect(Self.text(response).contains("hit"))
        #expect(gateway.stop() == 0)
        #expect(gateway.stdout.contains("drained"))
    }

    /// LIFE-02: a request that outlives the drain timeout is cut, the process exits on time, and the access log
    /// counts the request as abandoned (499), not as an upstream failure.
    @Test func aRequestOutlivingTheDrainIsCutAndLoggedAs499() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: """
                server:
                  listen: ["127.0.0.1:PORT"]
                  threads: 1
                  limits: { drain_timeout: 1s }
                admin:
                  listen: "127.0.0.1:ADMIN"
                upstreams:
                  open: { base_url: "http://127.0.0.1:\(upstream.port)", timeout: { response: 30s } }
                routes:
                  - { name: open, match: { path_prefix: /open }, upstream: open }
                """)
        let client = HTTPClient()
        let url = "\(gateway.url)/open/slow?ms=10000"
        let inFlight = Task { try await client.execute(HTTPClientRequest(url: url)) }
        try await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        gateway.signal(SIGTERM)
        await #expect(throws: HTTPClientError.self) { _ = try await inFlight.value }
        #expect(gateway.stop() == 0)
        #expect(
            ContinuousClock.now - started < .seconds(4), "exit at the 1 s drain timeout, not after the 10 s request")
        let record = try #require(gateway.accessLog.first { ($0["path"] as? String)?.hasPrefix("/open/slow") == true })
        #expect(record["status"] as? Int == 499)
        #expect(record["upstream_error"] as? String == "cancelled")
    }

    @Test func routeRetriesApplyToIdempotentRequestsOnly() async throws {
        let upstream = try await RecordingUpstream.start()
        let routes = """
              - name: retried
                match: { path_prefix: /retried }
                upstream: open
                retries: { attempts: 3, statuses: [503] }
            """
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: upstream.port, extraRoutes: routes),
            environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        let get = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/retried/status/503"))
        #expect(get.status == 503)
        #expect(upstream.requests.count == 3, "GET: the first try and two retries")
        upstream.reset()
        let post = try await client.execute(
            HTTPClientRequest(method: .post, url: "\(gateway.url)/retried/status/503", body: .bytes([1])))
        #expect(post.status == 503)
        #expect(upstream.requests.count == 1, "POST is never retried")
        gateway.stop()
    }

    @Test func readinessAndMetricsOnTheAdminListener() async throws {
        let gateway = try await GatewayProcess(
            config: Self.proxyConfig(upstreamPort: 1), environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        _ = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stubbed"))
        let health = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/healthz"))
        #expect(health.status == 200)
        let metrics = Self.text(
            try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(gateway.adminPort)/metrics")))
        #expect(metrics.contains("moya_gateway_requests_total{route=\"stubbed\",status=\"201\"} 1"))
        #expect(metrics.contains("moya_gateway_open_connections"))
        gateway.stop()
    }
}
