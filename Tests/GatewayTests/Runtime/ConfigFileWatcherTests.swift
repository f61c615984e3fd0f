import Foundation
import Locking
import Testing

@testable import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// `ConfigFileWatcher` on a real directory: a burst of writes is one call after the debounce, files it does not
/// watch and plain writes to an open file are not changes, a replaced watch set is what counts, and `stop` ends it.
@Suite struct ConfigFileWatcherTests {
    final class Calls: Sendable {
        private let count = Locked(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
    }

    static func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<250 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    @Test func aBurstIsOneChangeAndOnlyWatchedNamesCount() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = "\(directory)/gateway.yaml"
        let other = "\(directory)/other.txt"
        let log = "\(directory)/gw.log"
        try "a".write(toFile: config, atomically: true, encoding: .utf8)
        let calls = Calls()
        let watcher = try ConfigFileWatcher(debounce: .milliseconds(400)) { calls.add() }
        defer { watcher.stop() }
        #expect(watcher.watch([config]).isEmpty)

        for version in 0..<5 {
            try "v\(version)".write(toFile: config, atomically: true, encoding: .utf8)
            try await Task.sleep(for: .milliseconds(30))
        }
        #expect(await Self.waitFor { calls.value == 1 })
        try await Task.sleep(for: .milliseconds(800))
        #expect(calls.value == 1, "five writes in a burst: one change")

        // Another file beside it, and a log file written while open: no change.
        try "x".write(toFile: other, atomically: true, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: log, contents: nil))
        try await Task.sleep(for: .milliseconds(800))
        #expect(calls.value == 1)
        let handle = try #require(FileHandle(forWritingAtPath: log))
        for _ in 0..<10 { try handle.write(contentsOf: Data("line\n".utf8)) }
        try await Task.sleep(for: .milliseconds(800))
        #expect(calls.value == 1)

        // The other file joins the set: its changes count, the config's no longer.
        watcher.watch([other])
        try "y".write(toFile: other, atomically: true, encoding: .utf8)
        #expect(await Self.waitFor { calls.value == 2 })
        try handle.close()

        watcher.stop()
        try "z".write(toFile: other, atomically: true, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(800))
        #expect(calls.value == 2, "stopped: no more calls")
    }
}
