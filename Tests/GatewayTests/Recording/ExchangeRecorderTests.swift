import Foundation
import HTTPWire
import Logging
import TestSupport
import Testing

@testable import Gateway

/// What `moya-gateway record` keeps (issue 39), in process: distinct exchanges, decoded bodies, scrubbed secrets, the
/// size caps, the latency fit and the directory it refuses to write into.
@Suite struct ExchangeRecorderTests {
    static let logger = Logger(label: "test")

    static func observe(
        _ recorder: ExchangeRecorder, target: String = "/v1/users/7?b=2&a=1", body: [UInt8] = Array("{}".utf8),
        requestHeaders: HTTPFields = [:], responseHeaders: HTTPFields = ["Content-Type": "application/json"],
        duration: Double = 0.02, secrets: [String] = []
    ) {
        recorder.observe(
            upstream: "users", basePath: "/v1", method: "GET", target: target, requestHeaders: requestHeaders,
            varyNames: ["X-Tenant", "Authorization"],
            identityNames: ExchangeRecorder.identityNames(apiKeyHeader: "X-Api-Key", redacted: []),
            status: 200, responseHeaders: responseHeaders, body: body, duration: duration, secrets: secrets,
            logger: logger)
    }

    @Test func oneEntryPerDistinctExchangeWithItsTimes() {
        let recorder = ExchangeRecorder()
        Self.observe(recorder, duration: 0.02)
        Self.observe(recorder, target: "/v1/users/7?a=1&b=2", duration: 0.04)
        Self.observe(recorder, requestHeaders: ["X-Tenant": "acme", "Authorization": "Bearer x"])
        Self.observe(recorder, target: "/v1/users/8")
        let (entries, observed, skipped, _) = recorder.snapshot()
        #expect(observed == 4 && skipped.isEmpty)
        #expect(entries.count == 3, "the query's order does not make another exchange; a vary header does")
        #expect(entries[0].path == "/users/7", "without the base URL's path")
        #expect(entries[0].query.map(\.name) == ["a", "b"])
        #expect(entries[0].durations == [0.02, 0.04] && entries[0].count == 2)
        #expect(entries[1].varyHeaders.map(\.name) == ["X-Tenant"], "never an identity header")
    }

    @Test func bodiesAreDecodedAndSecretsScrubbed() throws {
        let recorder = ExchangeRecorder()
        let body = Array(#"{"token": "s3cret-token", "cookie": "c00kie-value"}"#.utf8)
        Self.observe(
            recorder, body: try Deflater.compress(body, coding: .gzip),
            responseHeaders: [
                "Content-Type": "application/json", "Content-Encoding": "gzip",
                "Set-Cookie": "session=c00kie-value", "X-Echo": "Bearer s3cret-token", "Date": "x"
            ],
            secrets: ["s3cret-token", "c00kie-value"])
        let entry = try #require(recorder.snapshot().entries.first)
        #expect(entry.decodedFrom == "gzip")
        #expect(String(decoding: entry.body, as: UTF8.self) == #"{"token": "[REDACTED]", "cookie": "[REDACTED]"}"#)
        #expect(entry.headers.map(\.name) == ["Content-Type", "X-Echo"], "no Set-Cookie, Date or Content-Encoding")
        #expect(entry.headers.last?.value == "Bearer [REDACTED]")
        let broken = ExchangeRecorder()
        Self.observe(broken, body: [1, 2, 3], responseHeaders: ["Content-Encoding": "gzip"])
        #expect(broken.snapshot().skipped[.undecodable] == 1)
    }

    @Test func theSizeCapsCountWhatIsNotRecorded() {
        let recorder = ExchangeRecorder(limits: .init(maxBodyBytes: 10, maxTotalBytes: 15))
        Self.observe(recorder, body: Array(repeating: 1, count: 11))
        Self.observe(recorder, target: "/v1/a", body: Array(repeating: 1, count: 10))
        Self.observe(recorder, target: "/v1/b", body: Array(repeating: 1, count: 10))
        Self.observe(recorder, target: "/v1/c", body: Array(repeating: 1, count: 5))
        let (entries, _, skipped, bytes) = recorder.snapshot()
        #expect(entries.map(\.path) == ["/a", "/c"])
        #expect(bytes == 15)
        #expect(skipped[.streamed] == 1 && skipped[.full] == 1)
    }

    @Test func theLatencyFitIsLogNormal() {
        let fit = RecordingWriter.fit([0.02, 0.02, 0.02])
        #expect(abs(fit.median - 0.02) < 1e-9 && fit.sigma == 0)
        let spread = RecordingWriter.fit([0.01, 0.04])
        #expect(abs(spread.median - 0.02) < 1e-9, "the geometric mean")
        #expect(abs(spread.sigma - log(4) / 2.0.squareRoot()) < 1e-9)
        #expect(RecordingWriter.fit([]).median == 0)
    }

    /// REC-04: a recorded value holding `${` (a query value, a vary header) is written escaped, so the recording loads
    /// with the value that was recorded rather than an environment variable's (or an error for an unset one).
    @Test func aRecordedValueHoldingDollarBraceLoadsAsRecorded() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rec04-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configPath = directory + "/gateway.yaml"
        try """
        upstreams:
          users: { base_url: "http://127.0.0.1:9/v1" }
        routes:
          - { name: users, match: { path_prefix: /users }, upstream: users }
        """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let config = try ConfigLoader().load(path: configPath, environment: [:]).get()
        let recorder = ExchangeRecorder()
        Self.observe(recorder, target: "/v1/users/7?q=${HOME}", requestHeaders: ["X-Tenant": "${TENANT}-acme"])
        let out = directory + "/out"
        try RecordingWriter.prepare(out)
        _ = try RecordingWriter.write(recorder, configPath: configPath, config: config, to: out)
        let yaml = try String(contentsOfFile: out + "/gateway.yaml", encoding: .utf8)
        #expect(yaml.contains("$${HOME}") && yaml.contains("$${TENANT}-acme"), "\(yaml)")
        // Set, the variables would be read in place of the recorded values if they were not escaped.
        let replay = try ConfigLoader().load(
            path: out + "/gateway.yaml", environment: ["HOME": "/home/someone", "TENANT": "other"]
        ).get()
        let response = try #require(replay.upstream(named: "users")?.stub?.responses.first)
        #expect(response.match.query == [StubNameValue(name: "q", value: "${HOME}")])
        #expect(response.match.headers == [StubNameValue(name: "X-Tenant", value: "${TENANT}-acme")])
    }

    @Test func aRecordingGoesIntoANewOrEmptyDirectory() throws {
        let directory = ProcessRunner.temporaryDirectory("recorder")
        try RecordingWriter.prepare(directory + "/new/out")
        try "x".write(toFile: directory + "/new/out/file", atomically: true, encoding: .utf8)
        #expect(throws: RecordingWriter.WriteError.self) { try RecordingWriter.prepare(directory + "/new/out") }
        #expect(throws: RecordingWriter.WriteError.self) { try RecordingWriter.prepare(directory + "/new/out/file") }
    }
}
