import Foundation
import HTTPClientCore
import HTTPWire
import Locking
import TestSupport
import Testing

/// `moya-gateway record` and its replay (issue 39), end to end: about two thousand requests (eight at a time) through
/// the recording gateway to an upstream with known per-path latencies (20–80 ms), then the same requests to `serve`
/// on the recording with the upstream gone. The replayed statuses and bodies are the recorded ones, each path's
/// median latency is within 10 % of the recorded one, `check` accepts the recording unchanged, and no canary value
/// (the injected token, the client's `Authorization` and `Cookie`, the upstream's `Set-Cookie`, the API key, a
/// secret upstream header) is anywhere in the recording directory.
@Suite(
    .serialized,
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") && CheckCommandTests.binary() != nil,
        "needs moya-gateway built and python3"))
struct GatewayRecordReplayTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("faults/latency_upstream.py").path

    /// The canaries: none may be written into the recording.
    static let token = "canary-token-7f3a91"
    static let clientAuthorization = "Bearer canary-client-auth-55c1"
    static let cookie = "canary-cookie-c0ffee"
    static let setCookie = "canary-set-cookie-9d2e"
    static let apiKey = "canary-api-key-4b7e"
    static let upstreamKey = "canary-upstream-key-e19b"

    static func config(upstreamPort: Int) -> String {
        """
        \(GatewayProcess.listeners)
        logging: { level: warning, access_log: false }
        clients:
          api_keys: { keys: { web: "${WEB_KEY}" } }
        upstreams:
          api:
            base_url: http://127.0.0.1:\(upstreamPort)/v1
            access_token: { type: bearer, token: "${API_TOKEN}" }
            headers: { X-Upstream-Key: "${UPSTREAM_KEY}", X-From: gateway }
            pool: { max_connections: 32 }
        routes:
          - { name: api, match: { path_prefix: /api }, upstream: api, rewrite: { strip_prefix: /api }, timeout: 5s }
        """
    }

    /// One kind of request the clients make.
    struct Call: Sendable {
        var method: String
        var target: String
        var compared = true
    }

    static let calls: [Call] = [
        Call(method: "GET", target: "/api/fast"), Call(method: "GET", target: "/api/mid"),
        Call(method: "GET", target: "/api/slow"),
        Call(method: "GET", target: "/api/users/1?b=2&a=1"), Call(method: "GET", target: "/api/users/2"),
        Call(method: "GET", target: "/api/users/3?verbose=true"), Call(method: "GET", target: "/api/users/4"),
        Call(method: "GET", target: "/api/missing"), Call(method: "POST", target: "/api/items"),
        Call(method: "GET", target: "/api/gz"), Call(method: "GET", target: "/api/echo", compared: false),
        Call(method: "GET", target: "/api/users/5")
    ]

    /// What the clients saw: per call, the statuses and decoded bodies, and every latency in seconds.
    final class Observations: Sendable {
        let state = Locked<[String: (answers: Set<String>, latencies: [Double])]>([:])

        func add(_ key: String, answer: String, latency: Double) {
            state.withLock { state in
                state[key, default: ([], [])].answers.insert(answer)
                state[key, default: ([], [])].latencies.append(latency)
            }
        }

        var all: [String: (answers: Set<String>, latencies: [Double])] { state.withLock { $0 } }
    }

    /// `rounds` times every call, from `concurrency` clients at once.
    static func drive(_ url: String, rounds: Int, concurrency: Int) async throws -> Observations {
        let observations = Observations()
        let client = HTTPClient()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    for round in 0..<rounds {
                        // Each client starts the list at another place, so the paths overlap in time.
                        for index in 0..<calls.count {
                            let call = calls[(index + worker + round) % calls.count]
                            var request = try HTTPClientRequest(
                                method: HTTPMethod(call.method), url: url + call.target,
                                headers: [
                                    "X-Api-Key": apiKey, "Authorization": clientAuthorization,
                                    "Cookie": "session=\(cookie)"
                                ])
                            if call.method == "POST" { request.body = .bytes(Array(#"{"name": "x"}"#.utf8)) }
                            let started = ContinuousClock.now
                            let response = try await client.execute(request)
                            let elapsed = (ContinuousClock.now - started).components
                            let latency = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
                            var body = response.body
                            if response.headers.first(name: "Content-Encoding") == "gzip" {
                                body = try Inflater.decompress(body)
                            }
                            observations.add(
                                "\(call.method) \(call.target)",
                                answer: "\(response.status) \(String(decoding: body, as: UTF8.self))", latency: latency)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return observations
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    @Test func aRecordingReplaysTheSameAnswersAndLatenciesWithoutSecrets() async throws {
        let upstreamPort = try freeLoopbackPort()
        let upstream = Process()
        upstream.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        upstream.arguments = [Self.script, "--port", String(upstreamPort), "--cookie", Self.setCookie]
        upstream.standardOutput = FileHandle.nullDevice
        try ChildProcess.launch(upstream)
        // SIGKILL: a child of the test runner starts with SIGTERM blocked.
        defer { if upstream.isRunning { ProcessRunner.stop(upstream) } }
        let probe = HTTPClient()
        for _ in 0..<100 {
            if (try? await probe.execute(HTTPClientRequest(url: "http://127.0.0.1:\(upstreamPort)/v1/fast"))) != nil {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }

        let environment = ["WEB_KEY": Self.apiKey, "API_TOKEN": Self.token, "UPSTREAM_KEY": Self.upstreamKey]
        let out = ProcessRunner.temporaryDirectory("recording") + "/out"
        let recording = try await GatewayProcess(
            config: Self.config(upstreamPort: upstreamPort), environment: environment,
            command: "record --out \"\(out)\"")
        let recorded = try await Self.drive(recording.url, rounds: 22, concurrency: 8)
        #expect(recording.stop(timeout: 30) == 0)
        let summary = recording.stderr
        #expect(summary.contains("record: wrote \(out)/gateway.yaml: 12 distinct exchanges"), "\(summary)")
        #expect(summary.contains("from 2112 recorded requests"), "\(summary)")
        #expect(summary.contains("record: not recorded: none"), "\(summary)")
        #expect(summary.contains("1 bodies came gzip- or deflate-encoded"), "\(summary)")

        // No secret anywhere in the recording directory.
        let files = FileManager.default.enumerator(atPath: out)?.compactMap { $0 as? String } ?? []
        #expect(
            files.filter { $0.hasPrefix("stubs/api/") }.count == 12, "one stub file per distinct exchange: \(files)")
        for file in files {
            let text = (try? String(contentsOfFile: "\(out)/\(file)", encoding: .utf8)) ?? ""
            for canary in [
                Self.token, Self.clientAuthorization, "canary-client-auth", Self.cookie, Self.setCookie, Self.apiKey,
                Self.upstreamKey
            ] {
                #expect(!text.contains(canary), "\(canary) written into \(file)")
            }
        }
        let yaml = try String(contentsOfFile: "\(out)/gateway.yaml", encoding: .utf8)
        #expect(!yaml.contains("base_url:") && !yaml.contains("access_token:") && !yaml.contains("X-Upstream-Key"))
        #expect(yaml.contains("\"${WEB_KEY}\""), "a reference stays a reference")
        let echo = try String(
            contentsOfFile: "\(out)/stubs/api/"
                + (files.first { $0.contains("echo") }.map { ($0 as NSString).lastPathComponent } ?? ""),
            encoding: .utf8)
        #expect(echo.contains("[REDACTED]"), "an echoed credential is scrubbed: \(echo)")

        // `check` accepts it as it is; `serve` replays it with the upstream gone.
        ProcessRunner.stop(upstream)
        guard let binary = CheckCommandTests.binary() else { throw GatewayTestError("moya-gateway is not built") }
        let check = try ProcessRunner.run(
            binary.path, ["check", "--config", "\(out)/gateway.yaml"],
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        #expect(
            check.status == 0 && check.stdout.hasPrefix("ok: 1 routes, 1 upstreams"), "\(check.stdout) \(check.stderr)")
        // The same file with the recording run's ports as placeholders, for the test's new ones.
        let replayConfig = try String(contentsOfFile: "\(out)/gateway.yaml", encoding: .utf8)
            .replacingOccurrences(of: "127.0.0.1:\(recording.port)", with: "127.0.0.1:PORT")
            .replacingOccurrences(of: "127.0.0.1:\(recording.adminPort)", with: "127.0.0.1:ADMIN")
        let replay = try await GatewayProcess(
            config: replayConfig, environment: environment, files: try Self.stubFiles(in: out))
        let replayed = try await Self.drive(replay.url, rounds: 22, concurrency: 8)
        replay.stop()

        let before = recorded.all
        let after = replayed.all
        print(
            "record/replay medians (ms): "
                + Self.calls.map { call in
                    let key = "\(call.method) \(call.target)"
                    return
                        "\(key) \(Int(Self.median(before[key]?.latencies ?? []) * 1000))/\(Int(Self.median(after[key]?.latencies ?? []) * 1000))"
                }.joined(separator: ", "))
        for call in Self.calls {
            let key = "\(call.method) \(call.target)"
            let original = try #require(before[key])
            let again = try #require(after[key])
            if call.compared {
                #expect(original.answers.count == 1, "the upstream answers \(key) one way: \(original.answers)")
                #expect(
                    again.answers == original.answers, "\(key): replayed \(again.answers), recorded \(original.answers)"
                )
            } else {
                #expect(again.answers.allSatisfy { $0.contains("[REDACTED]") })
            }
            let recordedMedian = Self.median(original.latencies)
            let replayedMedian = Self.median(again.latencies)
            #expect(
                abs(replayedMedian - recordedMedian) <= 0.10 * recordedMedian,
                "\(key): median \(Int(replayedMedian * 1000)) ms replayed, \(Int(recordedMedian * 1000)) ms recorded")
        }
    }

    /// `moya-gateway spy`: the recorded exchanges are answered from the recording (with the upstream gone too), the
    /// others proxied; the access log says which (`stubbed`); a reload (SIGHUP) reads the recording again.
    @Test func spyAnswersFromTheRecordingAndProxiesTheRest() async throws {
        let upstreamPort = try freeLoopbackPort()
        let upstream = Process()
        upstream.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        upstream.arguments = [Self.script, "--port", String(upstreamPort)]
        upstream.standardOutput = FileHandle.nullDevice
        try ChildProcess.launch(upstream)
        defer { if upstream.isRunning { ProcessRunner.stop(upstream) } }
        let client = HTTPClient()
        for _ in 0..<100 {
            if (try? await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(upstreamPort)/v1/fast"))) != nil {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let environment = ["WEB_KEY": Self.apiKey, "API_TOKEN": Self.token, "UPSTREAM_KEY": Self.upstreamKey]
        let out = ProcessRunner.temporaryDirectory("spy") + "/out"
        let config = Self.config(upstreamPort: upstreamPort).replacingOccurrences(
            of: "access_log: false", with: "access_log: true")
        let recording = try await GatewayProcess(
            config: config, environment: environment, command: "record --out \"\(out)\"")
        let recorded = try await client.execute(
            HTTPClientRequest(url: "\(recording.url)/api/users/1", headers: ["X-Api-Key": Self.apiKey]))
        #expect(recorded.status == 200)
        #expect(recording.stop(timeout: 30) == 0)

        let spy = try await GatewayProcess(
            config: config, environment: environment, command: "spy --recording \"\(out)\"")
        func get(_ path: String) async throws -> String {
            let response = try await client.execute(
                HTTPClientRequest(
                    url: "\(spy.url)\(path)",
                    headers: [
                        "X-Api-Key": Self.apiKey,
                        "X-Request-Id": path
                    ]))
            return "\(response.status) \(String(decoding: response.body, as: UTF8.self))"
        }
        #expect(try await get("/api/users/1") == "200 " + String(decoding: recorded.body, as: UTF8.self))
        #expect(try await get("/api/users/2") == #"200 {"user": "2", "query": ""}"#, "not recorded: proxied")
        ProcessRunner.stop(upstream)
        #expect(try await get("/api/users/1").hasPrefix("200 "), "answered from the recording with the upstream gone")
        #expect(try await get("/api/users/3").hasPrefix("502 "))

        // A reload reads the recording again: its edited body is answered from then on.
        let recordedBody = String(decoding: recorded.body, as: UTF8.self)
        var edited = 0
        for file in FileManager.default.enumerator(atPath: out)?.compactMap({ $0 as? String }) ?? []
        where file.hasPrefix("stubs/")
            && (try? String(contentsOfFile: "\(out)/\(file)", encoding: .utf8)) == recordedBody
        {
            try #"{"edited": true}"#.write(toFile: "\(out)/\(file)", atomically: true, encoding: .utf8)
            edited += 1
        }
        #expect(edited == 1, "the recorded body is one file of the recording")
        spy.signal(SIGHUP)
        var answer = ""
        for _ in 0..<100 {
            answer = try await get("/api/users/1")
            if answer == #"200 {"edited": true}"# { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(answer == #"200 {"edited": true}"#, "the reloaded recording answers")
        spy.stop()
        let lines = spy.accessLog
        #expect(lines.first { $0["request_id"] as? String == "/api/users/1" }?["stubbed"] as? Bool == true)
        #expect(lines.first { $0["request_id"] as? String == "/api/users/2" }?["stubbed"] as? Bool == false)
    }

    /// The recording's stub files, as files for the replaying gateway's directory (its configuration names them
    /// relative to itself).
    static func stubFiles(in directory: String) throws -> [String: String] {
        var files: [String: String] = [:]
        for file in FileManager.default.enumerator(atPath: directory)?.compactMap({ $0 as? String }) ?? []
        where file.hasPrefix("stubs/") {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: "\(directory)/\(file)", isDirectory: &isDirectory),
                !isDirectory.boolValue
            else {
                continue
            }
            files[file] = try String(contentsOfFile: "\(directory)/\(file)", encoding: .utf8)
        }
        return files
    }
}
