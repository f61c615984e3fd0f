import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The directory a test process keeps its temporary files in: `moya-gateway-tests-PID` in the system's temporary
/// directory.
///
/// Tests leave their directories behind (a failing test's files are worth reading), so each run's go under one
/// directory, and the first use in a process removes those of runs whose process has ended: a developer's `/tmp`
/// holds the last run's files, not every run's.
package enum TestRunDirectory {
    private static let namePrefix = "moya-gateway-tests-"

    /// This process's directory, made (and the ended runs' removed) on first use.
    package static let path: String = {
        let parent = NSTemporaryDirectory()
        removeEndedRuns(in: parent)
        let path = "\(parent)\(namePrefix)\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// Removes the directories of test processes that no longer run.
    private static func removeEndedRuns(in parent: String) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        for entry in entries where entry.hasPrefix(namePrefix) {
            guard let pid = pid_t(entry.dropFirst(namePrefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { try? FileManager.default.removeItem(atPath: parent + entry) }
        }
    }
}
