import Foundation
import HTTPClientCore
import HTTPWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The access log's upstream timing and retry fields, and Moya's network logger bridged into the gateway's log, with
/// the real binary against a real upstream over loopback.
@Suite(.serialized) struct AccessLogAndExchangeLogTests {
    static func config(upstreamPort: Int, level: String = "info", logging: String = "") -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
          limits: { drain_timeout: 5s }
        admin:
          listen: "127.0.0.1:ADMIN"
        logging:
          level: \(level)
          access_log: true
          \(logging)
        upstreams:
          api:
            base_url: http://127.0.0.1:\(upstreamPort)/v1
            access_token: { type: bearer, token: "${API_TOKEN}" }
          stubbed:
            stub: { status: 200, headers: { Content-Type: text/plain, Set-Cookie: "sid=SETCOOKIE_CANARY" }, body: "ok" }
        routes:
          - name: api
            match: { path_prefix: /api }
            upstream: api
            rewrite: { strip_prefix: /api }
            retries: { attempts: 3, statuses: [503] }
          - name: stubbed
            match: { path: /stubbed }
            upstream: stubbed
        """
    }

    @Test func accessLogHasUpstreamConnectAndFirstByteTimesAndCountsRetries() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.config(upstreamPort: upstream.port), environment: ["API_TOKEN": "t"])
        let client = HTTPClient()
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        for id in ["first", "second"] {
            let response = try await client.execute(
                HTTPClientRequest(
                    url: "\(gateway.url)/api/users",
                    headers: ["X-Request-Id": id, "traceparent": traceparent]))
            #expect(response.status == 200)
        }
        #expect(upstream.requests.last?.head.headers.first(name: "traceparent") == traceparent, "forwarded as it came")
        let retried = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/api/status/503", headers: ["X-Request-Id": "retried"]))
        #expect(retried.status == 503)
        #expect(upstream.requests.count == 5, "two plain requests, then one request tried three times")
        let post = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(gateway.url)/api/status/503",
                headers: ["X-Request-Id": "post"], body: .bytes([1])))
        #expect(post.status == 503)
        let stub = try await client.execute(
            HTTPClientRequest(url: "\(gateway.url)/stubbed", headers: ["X-Request-Id": "stub"]))
        #expect(stub.status == 200)
        gateway.stop()

        var lines: [String: [String: Any]] = [:]
        for line in gateway.accessLog { if let id = line["request_id"] as? String { lines[id] = line } }
        let first = try #require(lines["first"])
        let second = try #require(lines["second"])
        #expect(first["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736", "the trace id is logged: \(first)")
        let connect = try #require(first["upstream_connect_ms"] as? Double, "a new upstream connection is timed")
        #expect(connect >= 0 && connect < 10_000)
        #expect(second["upstream_connect_ms"] is NSNull, "a pooled connection has no connect time")
        for line in [first, second] {
            let ttfb = try #require(line["upstream_ttfb_ms"] as? Double)
            #expect(ttfb >= 0 && ttfb < 10_000)
            #expect(line["retries"] as? Int == 0)
        }
        #expect(lines["retried"]?["retries"] as? Int == 2, "attempts: 3 → two retries")
        #expect(lines["retried"]?["upstream_ttfb_ms"] is Double)
        #expect(lines["post"]?["retries"] as? Int == 0, "POST is never retried")
        let stubLine = try #require(lines["stub"])
        #expect(
            stubLine["upstream_connect_ms"] is NSNull && stubLine["upstream_ttfb_ms"] is NSNull,
            "a stub has no exchange")
        #expect(stubLine["stubbed"] as? Bool == true)
    }

    @Test func debugLevelLogsUpstreamExchangesThroughMoyasNetworkLoggerWithSecretsRedacted() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.config(
                upstreamPort: upstream.port, level: "debug",
                logging: "redact_headers: [Authorization, Cookie, Set-Cookie, X-Tenant-Secret]"),
            environment: ["API_TOKEN": "UPSTREAM_TOKEN_CANARY"])
        let client = HTTPClient()
        let response = try await client.execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/users?token=QUERY_CANARY&page=2",
                headers: [
                    "Cookie": "s=COOKIE_CANARY", "X-Auth-Token": "AUTH_TOKEN_CANARY",
                    "Proxy-Authorization": "Basic PROXY_CANARY",
                    "X-Request-Id": "debug-1", "X-Tenant-Secret": "TENANT_CANARY"
                ]))
        #expect(response.status == 200)
        let received = try #require(upstream.requests.last)
        #expect(
            received.head.headers.first(name: "Authorization") == "Bearer UPSTREAM_TOKEN_CANARY", "the token is sent")
        #expect(received.head.headers.first(name: "X-Auth-Token") == "AUTH_TOKEN_CANARY", "redaction is for logs only")
        #expect(received.head.headers.first(name: "X-Tenant-Secret") == "TENANT_CANARY")
        let stub = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/stubbed"))
        #expect(stub.status == 200)
        #expect(stub.headers.first(name: "Set-Cookie") == "sid=SETCOOKIE_CANARY")
        gateway.stop()

        let logs = gateway.stdout + gateway.stderr
        let exchanges = gateway.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["msg"] as? String == "upstream exchange" }
        let entries = exchanges.compactMap { $0["entry"] as? String }
        #expect(exchanges.contains { $0["upstream"] as? String == "api" && $0["level"] as? String == "debug" })
        #expect(entries.contains { $0.hasPrefix("Request: ") && $0.contains("/v1/users?token=[REDACTED]&page=2") })
        #expect(
            entries.contains {
                $0.hasPrefix("Request Headers: ") && $0.contains("[REDACTED]") && $0.contains("X-Request-Id")
            })
        #expect(
            entries.contains { $0.hasPrefix("Response: ") && $0.contains("Set-Cookie") },
            "the stub's response is logged")
        #expect(
            entries.contains { $0.contains("X-Tenant-Secret") },
            "a name added to redact_headers is logged, its value is not")
        for canary in [
            "UPSTREAM_TOKEN_CANARY", "QUERY_CANARY", "COOKIE_CANARY", "AUTH_TOKEN_CANARY", "PROXY_CANARY",
            "SETCOOKIE_CANARY", "TENANT_CANARY"
        ] {
            #expect(!logs.contains(canary), "\(canary) leaked into the log")
        }
    }

    /// `logging.output: PATH`: the lines go to the file (appended to), not to stdout.
    @Test func logLinesGoToTheConfiguredFile() async throws {
        let upstream = try await RecordingUpstream.start()
        let directory = ProcessRunner.temporaryDirectory("gateway-log-output")
        let path = directory + "/gateway.log"
        try "earlier line\n".write(toFile: path, atomically: true, encoding: .utf8)
        let gateway = try await GatewayProcess(
            config: Self.config(upstreamPort: upstream.port, logging: "output: \(path)"),
            environment: ["API_TOKEN": "t"])
        let response = try await HTTPClient().execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/users",
                headers: ["X-Request-Id": "to-file"]))
        #expect(response.status == 200)
        #expect(gateway.stop() == 0)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "earlier line", "appended, not truncated")
        #expect(lines.contains { $0.contains("\"msg\":\"access\"") && $0.contains("\"request_id\":\"to-file\"") })
        #expect(!gateway.stdout.contains("to-file"))
    }

    /// `logging.output: stderr`: every line, the access log's and the start-up's, goes to stderr as JSON; stdout
    /// stays empty.
    @Test func logLinesGoToStderrWhenAsked() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.config(upstreamPort: upstream.port, logging: "output: stderr"),
            environment: ["API_TOKEN": "t"])
        let response = try await HTTPClient().execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/users",
                headers: ["X-Request-Id": "to-stderr"]))
        #expect(response.status == 200)
        #expect(gateway.stop() == 0)
        let lines = gateway.stderr.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(lines.contains { $0["msg"] as? String == "access" && $0["request_id"] as? String == "to-stderr" })
        #expect(lines.contains { $0["msg"] as? String == "listening" })
        #expect(gateway.stdout.isEmpty, "\(gateway.stdout.prefix(300))")
    }

    /// A gateway in front of a recording upstream, logging to `file` in a new directory named after `purpose`.
    private static func gatewayLoggingToFile(_ purpose: String, file: String = "gateway.log") async throws
        -> (gateway: GatewayProcess, upstream: RecordingUpstream, directory: String, path: String)
    {
        let upstream = try await RecordingUpstream.start()
        let directory = ProcessRunner.temporaryDirectory(purpose)
        let path = directory + "/" + file
        let gateway = try await GatewayProcess(
            config: config(upstreamPort: upstream.port, logging: "output: \(path)"),
            environment: ["API_TOKEN": "t"])
        return (gateway, upstream, directory, path)
    }

    /// A GET through `gateway` with `X-Request-Id: id`, answered 200.
    private static func call(_ gateway: GatewayProcess, id: String) async throws {
        let response = try await HTTPClient().execute(
            HTTPClientRequest(
                url: "\(gateway.url)/api/users",
                headers: ["X-Request-Id": id]))
        #expect(response.status == 200)
    }

    /// A log rotated by moving the file (logrotate's `create` mode): SIGUSR1, or a reload, makes the gateway open the
    /// path again; the moved file keeps every line logged before, the new one gets the lines after.
    @Test func aMovedLogFileIsReopenedOnSIGUSR1AndOnReload() async throws {
        let (gateway, upstream, _, path) = try await Self.gatewayLoggingToFile("gateway-log-rotation")
        defer { withExtendedLifetime(upstream) {} }
        func call(_ id: String) async throws { try await Self.call(gateway, id: id) }
        /// Waits (up to 2 s: the writer works in batches) until the file at `file` has a line containing every one of `needles`.
        func lines(of file: String, containing needles: [String]) async -> [String] {
            for _ in 0..<100 {
                let lines = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(
                    String.init)
                if needles.allSatisfy({ needle in lines.contains { $0.contains(needle) } }) { return lines }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        try await call("before-rotation")
        _ = await lines(of: path, containing: ["before-rotation"])
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        try await call("between-move-and-signal")
        gateway.signal(SIGUSR1)
        let reopened = await lines(of: path, containing: ["reopened the log file"])
        try await call("after-rotation")
        let fresh = await lines(of: path, containing: ["after-rotation"])
        #expect(reopened.first?.contains("\"msg\":\"reopened the log file\"") == true, "\(reopened)")
        #expect(
            fresh.contains { $0.contains("\"msg\":\"access\"") && $0.contains("\"request_id\":\"after-rotation\"") })
        #expect(!fresh.contains { $0.contains("before-rotation") || $0.contains("between-move-and-signal") })
        let rotated = await lines(of: path + ".1", containing: ["before-rotation", "between-move-and-signal"])
        #expect(rotated.contains { $0.contains("\"request_id\":\"before-rotation\"") })
        #expect(
            rotated.contains { $0.contains("\"request_id\":\"between-move-and-signal\"") },
            "lines logged after the move and before the signal are in the moved file")
        #expect(!rotated.contains { $0.contains("after-rotation") })

        // A reload (systemctl reload) reopens the file too, before it reloads, so its own lines are in the new file.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".2")
        gateway.signal(SIGHUP)
        let reloaded = await lines(of: path, containing: ["reopened the log file", "\"msg\":\"reloaded\""])
        #expect(reloaded.contains { $0.contains("\"msg\":\"reloaded\"") }, "\(reloaded)")
        try await call("after-reload")
        #expect(
            await lines(of: path, containing: ["after-reload"]).contains {
                $0.contains("\"request_id\":\"after-reload\"")
            })
        #expect(gateway.stop() == 0)
        #expect(try String(contentsOfFile: path + ".2", encoding: .utf8).contains("after-rotation"))
        #expect(!gateway.stdout.contains("after-rotation"))
    }

    /// The shipped logrotate stanza (`deploy/systemd/moya-gateway.logrotate`), run by the real logrotate with the
    /// log directory moved to a temporary one and its `systemctl kill` (there is no systemd here) turned into the
    /// same signal sent to the gateway's pid.
    @Test func theShippedLogrotateStanzaRotatesTheLogWithoutLosingALine() async throws {
        let (gateway, upstream, directory, path) = try await Self.gatewayLoggingToFile(
            "gateway-logrotate", file: "access.log")
        defer { withExtendedLifetime(upstream) {} }
        let shipped = try String(
            contentsOf: packageRoot.appendingPathComponent("deploy/systemd/moya-gateway.logrotate"),
            encoding: .utf8)
        let signalLine = "systemctl kill --signal=SIGUSR1 --kill-whom=main moya-gateway.service 2>/dev/null || true"
        #expect(shipped.contains("/var/log/moya-gateway/*.log {") && shipped.contains(signalLine))
        let stanza = shipped.replacingOccurrences(of: "/var/log/moya-gateway/", with: directory + "/")
            .replacingOccurrences(of: signalLine, with: "kill -USR1 \(gateway.process.processIdentifier)")
        try stanza.write(toFile: directory + "/logrotate.conf", atomically: true, encoding: .utf8)

        for index in 0..<20 { try await Self.call(gateway, id: "old-\(index)") }
        // Lines still queued in the gateway when logrotate moves the file are written to the moved file.
        let rotate = try ProcessRunner.run(
            "/usr/sbin/logrotate", ["--force", "--state", directory + "/state", directory + "/logrotate.conf"])
        #expect(rotate.status == 0, "\(rotate.stderr)")
        // `nocreate`: the path is there again once the gateway has reopened it. The file exists as soon as it is
        // opened, before the writer has moved to it (a line logged meanwhile still goes to the moved file, as
        // promised), so the new requests wait for the notice the gateway logs once it writes to the new file.
        for _ in 0..<250
        where !((try? String(contentsOfFile: path, encoding: .utf8))?.contains("reopened the log file") ?? false) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(FileManager.default.fileExists(atPath: path))
        for index in 0..<20 { try await Self.call(gateway, id: "new-\(index)") }
        #expect(gateway.stop() == 0)
        let rotated = try String(contentsOfFile: path + ".1", encoding: .utf8)
        let current = try String(contentsOfFile: path, encoding: .utf8)
        for index in 0..<20 {
            #expect(rotated.contains("\"request_id\":\"old-\(index)\""), "old-\(index) is in the rotated file")
            #expect(current.contains("\"request_id\":\"new-\(index)\""), "new-\(index) is in the new file")
        }
        #expect(!rotated.contains("\"request_id\":\"new-") && !current.contains("\"request_id\":\"old-"))
        #expect(current.split(separator: "\n").first?.contains("\"msg\":\"reopened the log file\"") == true)
    }

    @Test func infoLevelLogsNoUpstreamExchanges() async throws {
        let upstream = try await RecordingUpstream.start()
        let gateway = try await GatewayProcess(
            config: Self.config(upstreamPort: upstream.port), environment: ["API_TOKEN": "t"])
        let response = try await HTTPClient().execute(HTTPClientRequest(url: "\(gateway.url)/api/users"))
        #expect(response.status == 200)
        gateway.stop()
        #expect(!gateway.stdout.contains("upstream exchange"))
        #expect(gateway.accessLog.count == 1)
    }
}
