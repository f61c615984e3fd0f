import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Log outputs that fail say what failed (issue #37), through the real binary: a FIFO nobody reads stops the start
/// within seconds with the reason, a full output's lost lines are counted and reported once, and a reopen
/// (SIGUSR1) to a path that cannot be opened keeps writing to the output open before, saying why there.
@Suite(.serialized) struct GatewayLogOutputTests {
    static func config(output: String, upstreamStub: Bool = true) -> String {
        """
        server:
          listen: ["127.0.0.1:PORT"]
          threads: 1
        admin:
          listen: "127.0.0.1:ADMIN"
        logging: { output: "\(output)" }
        upstreams:
          canned: { stub: { status: 200, body: "ok" } }
        routes:
          - { name: hello, match: { path: /hello }, upstream: canned }
        """
    }

    @Test func aFIFOWithoutReaderStopsTheStartWithTheReason() throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-log-fifo")
        let fifo = "\(directory)/log.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let file = "\(directory)/gateway.yaml"
        try GatewayProcess.render(
            Self.config(output: fifo), port: try freeLoopbackPort(), admin: try freeLoopbackPort()
        )
        .write(toFile: file, atomically: true, encoding: .utf8)
        let started = ContinuousClock.now
        let serve = try CheckCommandTests.run(["serve", "--config", file])
        let took = ContinuousClock.now - started
        #expect(serve.status == 1)
        #expect(
            serve.stderr.contains(
                "logging.output: cannot open \(fifo) for appending: no process has the FIFO open for reading"),
            "\(serve.stderr)")
        #expect(took < .seconds(5), "a clear error within seconds, not a wait for a reader: \(took)")
    }

    @Test func linesLostToAFullOutputAreCountedAndReportedOnce() async throws {
        let gateway = try await GatewayProcess(config: Self.config(output: "/dev/full"))
        for _ in 0..<5 {
            let answer = try ProcessRunner.run("curl", ["-sS", "\(gateway.url)/hello"])
            #expect(answer.stdout == "ok")
        }
        var dropped = 0.0
        for _ in 0..<50 {
            dropped = gateway.metric("moya_gateway_log_lines_dropped_total") ?? 0
            if dropped >= 5 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        // The start's own lines and an access line per request.
        #expect(dropped >= 5, "dropped lines counted: \(dropped)")
        #expect(gateway.stop() == 0)
        let reports = gateway.stderr.split(separator: "\n").filter { $0.contains("log line") && $0.contains("dropped") }
        #expect(reports.count == 1, "one report within the minute: \(gateway.stderr)")
        #expect(reports.first?.contains("logging.output /dev/full") == true)
        #expect(reports.first?.contains("No space left on device") == true, "\(reports)")
    }

    @Test func aReopenToAPathThatCannotBeOpenedKeepsTheOldOutput() async throws {
        let directory = ProcessRunner.temporaryDirectory("gateway-log-reopen")
        let path = "\(directory)/gateway.log"
        let gateway = try await GatewayProcess(config: Self.config(output: path))
        _ = try ProcessRunner.run("curl", ["-sS", "\(gateway.url)/hello?first"])
        // Rotated away, and a FIFO nobody reads put in its place.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        #expect(mkfifo(path, 0o600) == 0)
        gateway.signal(SIGUSR1)
        // Served meanwhile: the open is tried off the loops.
        let during = try ProcessRunner.run("curl", ["-sS", "\(gateway.url)/hello?during"])
        #expect(during.stdout == "ok")
        var old = ""
        for _ in 0..<50 {
            old = (try? String(contentsOfFile: path + ".1", encoding: .utf8)) ?? ""
            if old.contains("cannot reopen the log file") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(old.contains("cannot reopen the log file; still writing to the one open before"), "\(old)")
        #expect(old.contains("no process has the FIFO open for reading"), "\(old)")
        _ = try ProcessRunner.run("curl", ["-sS", "\(gateway.url)/hello?after"])
        #expect(gateway.stop() == 0)
        old = (try? String(contentsOfFile: path + ".1", encoding: .utf8)) ?? ""
        for query in ["first", "during", "after"] {
            #expect(old.contains("/hello?\(query)"), "the \(query) request's line is in the old file")
        }
    }
}
