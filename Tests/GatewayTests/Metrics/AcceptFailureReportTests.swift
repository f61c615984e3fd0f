import Foundation
import Locking
import Testing

@testable import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// FD-01's stderr report without a process at its limit: the first failure is reported at once, the ones after it
/// within the interval in one summary line at its end, and nothing when no failure came.
@Suite struct AcceptFailureReportTests {
    @Test func theFirstFailureIsReportedAtOnceAndTheRestOncePerInterval() async throws {
        let lines = Locked<[String]>([])
        let report = AcceptFailureReport(interval: .seconds(1)) { line in lines.withLock { $0.append(line) } }
        for _ in 0..<25 { report.record(errno: EMFILE) }
        try await Task.sleep(for: .milliseconds(300))
        var seen = lines.withLock { $0 }
        #expect(seen.count == 1, "\(seen)")
        #expect(seen.first?.contains("failed 1 time: out of file descriptors (Too many open files)") == true, "\(seen)")
        #expect(seen.first?.hasPrefix("moya-gateway: ") == true)
        try await Task.sleep(for: .milliseconds(1000))
        seen = lines.withLock { $0 }
        #expect(seen.count == 2, "\(seen)")
        #expect(seen.last?.contains("failed 24 times in the last 1s") == true, "\(seen)")
        // Quiet since: no more lines.
        try await Task.sleep(for: .milliseconds(1200))
        #expect(lines.withLock { $0.count } == 2)
        report.record(errno: ENOBUFS)
        try await Task.sleep(for: .milliseconds(200))
        seen = lines.withLock { $0 }
        #expect(seen.count == 3, "\(seen)")
        #expect(seen.last?.contains("out of memory for sockets") == true, "\(seen)")
    }
}
