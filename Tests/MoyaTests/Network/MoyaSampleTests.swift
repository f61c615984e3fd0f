import Foundation
import TestSupport
import Testing

/// Runs the built `MoyaSample` executable (Examples/MoyaSample; `swift build` builds it) and checks its output.
@Suite struct MoyaSampleTests {

    static func binary() -> URL? { BuiltProducts.executable(named: "MoyaSample") }

    /// Runs the sample on a GCD thread (not the cooperative pool), killing it after `timeout` seconds.
    static func run(environment: [String: String] = [:], timeout: Double = 30) async throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        guard let binary = binary() else { throw CancellationError() }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = binary
                var env = ProcessInfo.processInfo.environment
                env.removeValue(forKey: "MOYA_SAMPLE_BASE_URL")
                for (key, value) in environment { env[key] = value }
                process.environment = env
                let out = Pipe()
                let err = Pipe()
                process.standardOutput = out
                process.standardError = err
                do {
                    try ChildProcess.launch(process)
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
                let stdout = out.fileHandleForReading.readDataToEndOfFile()
                let stderr = err.fileHandleForReading.readDataToEndOfFile()
                let status = ProcessRunner.waitForExit(process, timeout: timeout)
                killer.cancel()
                continuation.resume(
                    returning: (
                        status, String(decoding: stdout, as: UTF8.self),
                        String(decoding: stderr, as: UTF8.self)
                    ))
            }
        }
    }

    @Test(
        .enabled(
            if: binary() != nil,
            "MoyaSample is not built: run `swift build` (or `swift build --product MoyaSample`) first"))
    func sampleRunsTheREADMERequests() async throws {
        let result = try await Self.run()
        #expect(result.status == 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 9, "\(lines)")
        guard lines.count == 9 else { return }
        #expect(lines[0].hasPrefix("GitHub API: http://127.0.0.1:"))
        #expect(
            Array(lines[1...]) == [
                "[completion] zen: 200 Half measures are as bad as nothing at all.",
                "[completion] userProfile(ashfurrow): 200 Ash Furrow (@ashfurrow, id 100), 2 public repos",
                "[completion] userRepositories(ashfurrow): 200 Moya ★15000, ashfurrow.com ★40",
                "[async] zen: 200 Half measures are as bad as nothing at all.",
                "[async] userProfile(moya): 200 Moya (@moya, id 13662162), 3 public repos",
                "[async] userRepositories(moya): 200 Moya ★15000, RxSwift-Moya ★300, Harvey ★1200",
                "[async] userProfile(nobody-here): failed as expected with status 404",
                "All requests succeeded."
            ])
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    @Test(
        .enabled(
            if: binary() != nil,
            "MoyaSample is not built: run `swift build` (or `swift build --product MoyaSample`) first"))
    func sampleExitsNonZeroWhenTheAPIIsUnreachable() async throws {
        // Port 1 on loopback: nothing listens there (binding it needs root).
        let result = try await Self.run(environment: ["MOYA_SAMPLE_BASE_URL": "http://127.0.0.1:1"])
        #expect(result.status == 1, "stdout: \(result.stdout)")
        #expect(result.stdout.contains("[completion] zen: failed: connect failed"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("7 request(s) failed.\n"))
    }
}
