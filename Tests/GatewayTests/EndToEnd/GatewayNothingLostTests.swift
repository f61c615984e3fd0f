import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The harness needs the gateway binary and Debian's python3 with python3-h2 (h11, hpack, hyperframe).
func nothingLostHarnessAvailable() -> Bool {
    CheckCommandTests.binary() != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/h2")
}

/// The "nothing lost" harness of docs/reliability.md §4 (`faults/nothing_lost.py`) against the real `moya-gateway`
/// binary: 20 requests in flight (keep-alive, one-shot and h2c connections; GET and POST) through an echo upstream
/// with 0.5 s latency, an event at t = 2 s of a 5 s run, and every request id classified from the client's outcome,
/// the upstream's receipt log and the gateway's access log. The pass criteria are §4.3's: LOST = DUP = MISROUTED =
/// TRUNC = LOG_MISSING = 0 (with LOG_EXTRA and DROPPED, a silent close before the upstream, also 0), plus each
/// scenario's own. The harness starts and kills every process itself; a scenario takes 3 to 6 s.
@Suite(.serialized, .enabled(if: nothingLostHarnessAvailable(), "needs moya-gateway built and Debian's python3-h2"))
struct GatewayNothingLostTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/nothing_lost.py").path

    /// The harness's JSON summary line.
    struct Summary: CustomStringConvertible {
        let fields: [String: Any]
        let status: Int32
        let seconds: Double
        let directory: String

        func int(_ key: String) -> Int? { (fields[key] as? NSNumber)?.intValue }
        func double(_ key: String) -> Double? { (fields[key] as? NSNumber)?.doubleValue }
        func object(_ key: String) -> [String: Any] { fields[key] as? [String: Any] ?? [:] }
        var failed: [String] { fields["failed"] as? [String] ?? ["(no summary)"] }

        /// The examples the harness kept for one counter (ids, outcomes, upstream and access-log evidence).
        func examples(_ key: String) -> String {
            guard let list = object("examples")[key],
                let data = try? JSONSerialization.data(withJSONObject: list, options: [.sortedKeys])
            else { return "" }
            return String(decoding: data, as: UTF8.self)
        }

        var description: String {
            let keys = [
                "scenario", "proto", "outcomes", "ok", "retryable", "retryable_kinds", "LOST", "DUP", "MISROUTED",
                "TRUNC", "LOG_MISSING", "LOG_EXTRA", "DROPPED", "GET_UNEXPLAINED", "exit_code", "exit_after_signal_s",
                "followers", "shared_gets", "shared_get_upstream_hits", "STALE_SHARE", "idle_closes",
                "idle_closes_with_request_unread", "upstream_goaways", "upstream_ignored_above_goaway",
                "not_ok_by_method", "failed", "dir"
            ]
            var subset: [String: Any] = [:]
            for key in keys { if let value = fields[key] { subset[key] = value } }
            let data = (try? JSONSerialization.data(withJSONObject: subset, options: [.sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// Runs one scenario: `nothing_lost.py run --gateway BIN --dir DIR ARGUMENTS`, output redirected by the shell
    /// (no FileHandles handed to Process), bounded at `timeout` seconds (the harness's own hard deadline is 20 s).
    static func run(_ name: String, _ arguments: [String], timeout: Double = 40) async throws -> Summary {
        let binary = try #require(CheckCommandTests.binary())
        let directory = ProcessRunner.temporaryDirectory("nothing-lost-\(name)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments =
            [
                "-c",
                """
                script=$0; gateway=$1; dir=$2; shift 2
                exec /usr/bin/python3 "$script" run --gateway "$gateway" --dir "$dir" "$@" >"$dir/harness.out" 2>"$dir/harness.err"
                """, script, binary.path, directory
            ] + arguments
        process.standardInput = nil
        let started = ContinuousClock.now
        try ChildProcess.launch(process)
        while process.isRunning && ContinuousClock.now - started < .seconds(timeout) {
            try await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)  // the harness kills its gateway and upstream, then exits
            try await Task.sleep(for: .milliseconds(500))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        let status = ProcessRunner.waitForExit(process, timeout: 5)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let output = (try? String(contentsOfFile: "\(directory)/harness.out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: "\(directory)/harness.err", encoding: .utf8)) ?? ""
        let line = output.split(separator: "\n").last.map(String.init) ?? ""
        let fields = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        guard let fields else {
            throw GatewayTestError(
                "\(name): no summary from the harness (status \(status)): \(output) \(errors.suffix(2000))")
        }
        return Summary(fields: fields, status: status, seconds: seconds, directory: directory)
    }

    /// §4.3's criteria, each counter named in its own expectation with the harness's evidence.
    static func expectNothingLost(_ summary: Summary, sourceLocation: SourceLocation = #_sourceLocation) {
        for counter in ["LOST", "DUP", "MISROUTED", "TRUNC", "LOG_MISSING", "LOG_EXTRA", "DROPPED"] {
            let value = summary.int(counter)
            #expect(
                value == 0,
                "\(counter) = \(value.map(String.init) ?? "missing"): \(summary.examples(counter)) \(summary)",
                sourceLocation: sourceLocation)
        }
        #expect(
            summary.status == 0 && summary.failed.isEmpty,
            "harness exit \(summary.status), failed criteria \(summary.failed): \(summary)",
            sourceLocation: sourceLocation)
        #expect(
            (summary.int("ok") ?? 0) >= 40, "too few requests went through to mean anything: \(summary)",
            sourceLocation: sourceLocation)
        #expect(summary.seconds < 12, "the scenario took \(summary.seconds) s", sourceLocation: sourceLocation)
    }

    /// The drain: exit 0 within the drain timeout (3 s here) + 1 s.
    static func expectCleanExit(_ summary: Summary, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            summary.int("exit_code") == 0, "exit_code = \(String(describing: summary.fields["exit_code"])): \(summary)",
            sourceLocation: sourceLocation)
        let after = summary.double("exit_after_signal_s")
        #expect(
            after != nil && after! <= 4, "exit_after_signal_s = \(String(describing: after)): \(summary)",
            sourceLocation: sourceLocation)
    }

    /// The harness itself: with an upstream that answers some ids with another id's body and some with a silently
    /// shortened one, it must count MISROUTED and TRUNC (through the gateway, which passes both on as it got them)
    /// and fail. Guards against a harness that passes everything.
    @Test func theHarnessSeesMisroutedAndTruncatedAnswers() async throws {
        let summary = try await Self.run(
            "selfcheck",
            [
                "--event", "none", "--proto", "mix", "--duration", "2",
                "--event-at", "1", "--upstream-faults"
            ])
        #expect((summary.int("MISROUTED") ?? 0) > 0, "MISROUTED: \(summary)")
        #expect((summary.int("TRUNC") ?? 0) > 0, "TRUNC: \(summary)")
        #expect(
            summary.status == 1 && summary.failed.contains("MISROUTED") && summary.failed.contains("TRUNC"),
            "the harness fails the run: \(summary)")
        #expect(summary.int("LOST") == 0 && summary.int("DROPPED") == 0, "\(summary)")
    }

    /// LIFE-01: SIGTERM during 20-client HTTP/1.1 load (keep-alive with think time, and one-shot connections).
    @Test func life01SigtermWithHTTP1LoadLosesNothing() async throws {
        let summary = try await Self.run("life01", ["--event", "term", "--proto", "h1"])
        Self.expectNothingLost(summary)
        Self.expectCleanExit(summary)
        let withoutClose = summary.int("keepalive_responses_after_term_without_close")
        #expect(
            withoutClose == 0,
            "keepalive_responses_after_term_without_close = \(String(describing: withoutClose)): the drain's responses say Connection: close"
        )
        #expect((summary.int("keepalive_close_responses") ?? 0) > 0, "keepalive_close_responses: \(summary)")
    }

    /// LIFE-06: SIGTERM with h2c clients: a two-phase GOAWAY, and the streams above the final last-stream-id (the
    /// client goes on opening streams for 300 ms after the shutdown notice, as a distant peer would) never reached
    /// the upstream.
    @Test func life06SigtermWithHTTP2ClientsSendsGoAwayAndLosesNothing() async throws {
        let summary = try await Self.run("life06", ["--event", "term", "--proto", "h2", "--h2-race"])
        Self.expectNothingLost(summary)
        Self.expectCleanExit(summary)
        let patterns = summary.object("goaway_patterns")
        #expect(
            !patterns.isEmpty
                && patterns.keys.allSatisfy { $0.hasPrefix("2147483647,") && $0.split(separator: ",").count == 2 },
            "goaway_patterns: every connection got the notice (2^31-1) then one final GOAWAY: \(patterns)")
        let aboveLast = (summary.object("retryable_kinds")["goaway_above_last_stream"] as? NSNumber)?.intValue ?? 0
        #expect(aboveLast > 0, "retryable_kinds.goaway_above_last_stream: the race was exercised: \(summary)")
    }

    /// LIFE-03: SIGHUP with a valid config that adds a route, under mixed load: no refused or failed request, and
    /// requests sent more than 1 s after the reload see the new route.
    @Test func life03ReloadWithAValidConfigLosesNothingAndServesTheNewRoute() async throws {
        let summary = try await Self.run("life03", ["--event", "reload-good", "--proto", "mix"])
        Self.expectNothingLost(summary)
        #expect(
            summary.int("retryable") == 0,
            "retryable = \(String(describing: summary.int("retryable"))): the listener stays open: \(summary)")
        #expect(summary.int("not_ok") == 0, "not_ok = \(String(describing: summary.int("not_ok"))): \(summary)")
        let seen = summary.double("new_route_first_seen_s")
        #expect(
            seen != nil && seen! <= 1,
            "new_route_first_seen_s = \(String(describing: seen)); probe \(summary.object("probe"))")
        #expect(!summary.failed.contains("new_route_within_1s"), "new_route_within_1s: \(summary.object("probe"))")
        #expect(
            !summary.failed.contains("reload_success_metric"),
            "reload_success_metric: \(summary.object("reload_metrics"))")
    }

    /// LIFE-03 with a relayed body in flight: a client reads a 12 MiB answer (relayed, not collected) at 4 MiB/s from
    /// 1 s before the reload to well after it. The reload must not cut it ("a request in flight finishes on the
    /// configuration it started with", operations.md).
    /// (It did: the old snapshot's `HTTPClient` went when the last handler on it returned, and its deinit closed the
    /// connection the relay was reading; a streamed response now keeps its client alive.)
    @Test
    func life03ReloadDoesNotCutARelayedBodyInFlight() async throws {
        let summary = try await Self.run(
            "life03-relay", ["--event", "reload-good", "--proto", "mix", "--slow-readers", "1"])
        Self.expectNothingLost(summary)
        #expect(summary.int("not_ok") == 0, "not_ok = \(String(describing: summary.int("not_ok"))): \(summary)")
    }

    /// LIFE-04: SIGHUP with an invalid config: the old one keeps serving, the error is logged, the metric says so.
    @Test func life04ReloadWithAnInvalidConfigKeepsServing() async throws {
        let summary = try await Self.run("life04", ["--event", "reload-bad", "--proto", "mix"])
        Self.expectNothingLost(summary)
        #expect(
            summary.int("retryable") == 0, "retryable = \(String(describing: summary.int("retryable"))): \(summary)")
        #expect(summary.int("not_ok") == 0, "not_ok = \(String(describing: summary.int("not_ok"))): \(summary)")
        #expect(!summary.failed.contains("old_config_kept"), "old_config_kept: \(summary.object("probe"))")
        #expect(
            !summary.failed.contains("reload_failure_metric"),
            "reload_failure_metric: \(summary.object("reload_metrics"))")
        #expect(
            !summary.failed.contains("reload_error_logged"), "reload_error_logged: see \(summary.directory)/proxy.out")
    }

    /// LIFE-05: kill -9 of the upstream under mixed load, restarted on the same port 0.3 s later: GET errors only
    /// for requests the dead upstream held or that came while it was down, no POST received twice.
    @Test func life05UpstreamRestartFailsOnlyWhatCouldNotSucceed() async throws {
        let summary = try await Self.run("life05", ["--event", "upstream-restart", "--proto", "mix"])
        Self.expectNothingLost(summary)
        let unexplained = summary.int("GET_UNEXPLAINED")
        #expect(
            unexplained == 0,
            "GET_UNEXPLAINED = \(String(describing: unexplained)): \(summary.examples("GET_UNEXPLAINED")) \(summary)")
    }

    /// A `coalesce: true` route's evidence: followers got their flight's answer (the leader's echo for the very same
    /// URL and identity, asked before the answer was sent), so the upstream saw fewer GETs than were sent.
    static func expectCoalesced(_ summary: Summary, sourceLocation: SourceLocation = #_sourceLocation) {
        let followers = summary.int("followers") ?? 0
        let gets = summary.int("shared_gets") ?? 0
        let hits = summary.int("shared_get_upstream_hits") ?? Int.max
        #expect(
            followers > 0 && hits < gets,
            "followers = \(followers), upstream hits \(hits) for \(gets) GETs: \(summary)",
            sourceLocation: sourceLocation)
        #expect(
            summary.int("STALE_SHARE") == 0, "STALE_SHARE: \(summary.examples("STALE_SHARE")) \(summary)",
            sourceLocation: sourceLocation)
    }

    /// COAL-01, -03, -09 across a good reload (LIFE-03): GETs (two identities) and POSTs of every worker go to the
    /// same URLs on a `coalesce: true` route. Every client gets its own answer or its flight's (same URL, same
    /// `Authorization`, never a POST's, never one finished before it asked), nothing fails, nothing is lost.
    @Test func coalescedRouteAcrossAReloadSharesOnlyWhatItMayAndLosesNothing() async throws {
        let summary = try await Self.run("coal-reload", ["--event", "reload-good", "--proto", "mix", "--coalesce"])
        Self.expectNothingLost(summary)
        Self.expectCoalesced(summary)
        #expect(summary.int("not_ok") == 0, "not_ok = \(String(describing: summary.int("not_ok"))): \(summary)")
    }

    /// LIFE-01/-06 on a coalesced route: SIGTERM with flights in progress; their followers get the answer too.
    @Test func coalescedRouteDrainsItsFlightsOnSigterm() async throws {
        let summary = try await Self.run("coal-term", ["--event", "term", "--proto", "mix", "--coalesce"])
        Self.expectNothingLost(summary)
        Self.expectCleanExit(summary)
        Self.expectCoalesced(summary)
    }

    /// LIFE-05 on a coalesced route: a kill -9 of the upstream fails a flight's leader and followers alike with an
    /// explicit error (GET_UNEXPLAINED counts followers too), and later flights work again.
    @Test func coalescedRouteAcrossAnUpstreamRestartFailsOnlyWhatCouldNotSucceed() async throws {
        let summary = try await Self.run("coal-life05", ["--event", "upstream-restart", "--proto", "mix", "--coalesce"])
        Self.expectNothingLost(summary)
        Self.expectCoalesced(summary)
        #expect(
            summary.int("GET_UNEXPLAINED") == 0, "GET_UNEXPLAINED: \(summary.examples("GET_UNEXPLAINED")) \(summary)")
    }

    /// LIFE-05 with the upstream spoken to over h2c (`pool: { http2: always }`, one multiplexed connection per loop):
    /// the kill -9 fails the streams in flight with explicit errors, the pool reconnects, no POST is received twice.
    @Test func http2UpstreamRestartFailsOnlyWhatCouldNotSucceed() async throws {
        let summary = try await Self.run(
            "h2up-life05", ["--event", "upstream-restart", "--proto", "mix", "--upstream-h2"])
        Self.expectNothingLost(summary)
        #expect(
            summary.int("GET_UNEXPLAINED") == 0, "GET_UNEXPLAINED: \(summary.examples("GET_UNEXPLAINED")) \(summary)")
    }

    /// LIFE-03 with an h2c upstream: the old snapshot's client (and its multiplexed connections) must not cut the
    /// streams in flight across the reload.
    @Test func http2UpstreamAcrossAReloadLosesNothing() async throws {
        let summary = try await Self.run(
            "h2up-life03",
            [
                "--event", "reload-good", "--proto", "mix", "--upstream-h2",
                "--slow-readers", "1"
            ])
        Self.expectNothingLost(summary)
        #expect(summary.int("not_ok") == 0, "not_ok = \(String(describing: summary.int("not_ok"))): \(summary)")
    }

    /// UP-10: the upstream closes keep-alive connections idle 0.3 s, and a request reaching it in the last 50 ms of
    /// that is closed unread (a RST, as a request crossing the close on the wire); clients think 0.3 s +/- 15 %, so
    /// the gateway reuses pooled connections right at the expiry. No GET fails (retried on a fresh connection, no
    /// response byte having arrived); a POST may get 502, and the upstream never sees one twice.
    @Test func up10KeepAliveExpiryAlignedWithReuseFailsNoGet() async throws {
        let summary = try await Self.run(
            "up10",
            [
                "--event", "none", "--proto", "h1", "--idle-close", "0.3",
                "--idle-race", "0.05", "--think", "0.3", "--think-spread", "0.15",
                "--delay", "0.05"
            ])
        Self.expectNothingLost(summary)
        #expect(!summary.failed.contains("get_not_ok"), "a GET failed: \(summary)")
        #expect(!summary.failed.contains("post_failed_only_502"), "a POST failed otherwise than 502: \(summary)")
        #expect((summary.int("idle_closes_with_request_unread") ?? 0) > 0, "the race was exercised: \(summary)")
    }

    /// UP-10 with the gateway's `pool.idle_timeout` (0.2 s) below the upstream's undeclared 0.3 s: no pooled
    /// connection is reused near the upstream's close, so not even a POST fails.
    @Test func up10PoolIdleTimeoutBelowTheUpstreamsFailsNothing() async throws {
        let summary = try await Self.run(
            "up10-idle",
            [
                "--event", "none", "--proto", "h1", "--idle-close", "0.3",
                "--idle-race", "0.05", "--think", "0.3", "--think-spread", "0.15",
                "--delay", "0.05", "--pool-idle-timeout", "0.2"
            ])
        Self.expectNothingLost(summary)
        #expect(summary.int("post_not_ok") == 0, "a POST failed: \(summary)")
        #expect(!summary.failed.contains("get_not_ok"), "a GET failed: \(summary)")
    }

    /// A graceful h2c upstream shutdown: every upstream connection gets GOAWAY (NO_ERROR) whose last-stream-id lags
    /// 100 ms behind the streams arriving (a GOAWAY crossing new streams on the wire); the upstream answers the streams
    /// up to it and never processes those above. Those were not processed, so the gateway retries them on a new
    /// connection whatever their method (RFC 9113 §8.7): no request fails, none is received twice.
    @Test func http2UpstreamGoAwayFailsNothing() async throws {
        let summary = try await Self.run(
            "h2up-goaway", ["--event", "upstream-goaway", "--proto", "mix", "--upstream-h2"])
        Self.expectNothingLost(summary)
        #expect(summary.int("not_ok") == 0, "not_ok = \(String(describing: summary.int("not_ok"))): \(summary)")
        #expect((summary.int("upstream_goaways") ?? 0) > 0, "the upstream sent GOAWAY: \(summary)")
    }
}
