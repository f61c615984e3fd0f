import Foundation
import Testing

@testable import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// The log writer: bounded, never blocking a request, and never holding the process at exit.
@Suite struct LogSinkTests {
    /// A pipe whose read end the test holds: nothing is read until `drain`.
    private final class UnreadPipe {
        let readEnd: Int32
        let writeEnd: Int32
        var path: String { "/proc/self/fd/\(writeEnd)" }

        init() throws {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
            readEnd = fds[0]
            writeEnd = fds[1]
        }

        /// Reads until the writer has gone quiet for a moment.
        func drain() -> Int {
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            while poll(&poller, 1, 200) > 0 {
                let count = read(readEnd, &buffer, buffer.count)
                if count <= 0 { break }
                total += count
            }
            return total
        }

        deinit {
            close(readEnd)
            close(writeEnd)
        }
    }

    @Test func flushingIntoAnOutputNobodyReadsGivesUpAtItsTimeout() throws {
        let pipe = try UnreadPipe()
        let sink = try LogSink(destination: .file(pipe.path))
        let line = String(repeating: "x", count: 1_000)
        for _ in 0..<200 { sink.write(line) }  // ~200 KB: more than the pipe holds
        let started = ContinuousClock.now
        #expect(sink.flush(timeout: .milliseconds(300)) == false, "the writer is stuck on the full pipe")
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(250) && waited < .seconds(2), "bounded by the timeout: \(waited)")
        // Writing still never blocks the caller.
        let writeStarted = ContinuousClock.now
        for _ in 0..<1_000 { sink.write(line) }
        #expect(ContinuousClock.now - writeStarted < .seconds(1))
        // Once somebody reads, everything queued goes out and a flush completes.
        #expect(pipe.drain() >= 200 * 1_001)
        #expect(sink.flush(timeout: .seconds(5)))
    }

    @Test func flushWritesEveryQueuedLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("logsink-\(UUID().uuidString).log")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try LogSink(destination: .file(path))
        for index in 0..<500 { sink.write("line \(index)") }
        #expect(sink.flush())
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 500)
        #expect(lines.last == "line 499")
        // Any timeout, however long, is taken as it is (no overflow working out the deadline).
        sink.write("line 500")
        #expect(sink.flush(timeout: .seconds(Int64.max)))
        #expect(sink.flush(timeout: .seconds(-1)))
    }

    private static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("logsink-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// logrotate's default (`create`): the file is moved away, then the gateway is told to reopen its path.
    @Test func reopenAfterTheFileWasMovedWritesToANewFileAndLosesNothing() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.log"
        let sink = try LogSink(destination: .file(path))
        #expect(sink.filePath == path)
        for index in 0..<100 { sink.write("before \(index)") }
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")
        for index in 0..<100 { sink.write("queued \(index)") }
        try await sink.reopen()
        for index in 0..<100 { sink.write("after \(index)") }
        #expect(sink.flush())
        let rotated = try Self.lines(path + ".1")
        let fresh = try Self.lines(path)
        #expect(
            rotated == (0..<100).map { "before \($0)" } + (0..<100).map { "queued \($0)" },
            "what was logged before the reopen goes to the moved file")
        #expect(fresh == (0..<100).map { "after \($0)" })
    }

    /// logrotate's `copytruncate`: the file is copied and truncated in place; appending goes on at its new end, with
    /// no hole of zeros where the old lines were.
    @Test func aFileTruncatedInPlaceIsWrittenFromItsNewEnd() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/gateway.log"
        let sink = try LogSink(destination: .file(path))
        sink.write(String(repeating: "x", count: 10_000))
        #expect(sink.flush())
        #expect(truncate(path, 0) == 0)
        sink.write("after truncation")
        #expect(sink.flush())
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("after truncation\n".utf8))
    }

    /// A path that cannot be opened again (its directory is gone) is an error, and lines go on to the open file.
    @Test func aFailedReopenKeepsWritingToTheOpenFile() async throws {
        let directory = try Self.temporaryDirectory()
        let moved = directory + ".moved"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: moved)
        }
        let sink = try LogSink(destination: .file(directory + "/gateway.log"))
        sink.write("first")
        try FileManager.default.moveItem(atPath: directory, toPath: moved)
        let error = await #expect(throws: LogSink.OpenError.self) { try await sink.reopen() }
        #expect(
            error?.description
                == "logging.output: cannot open \(directory)/gateway.log for appending: No such file or directory")
        sink.write("second")
        #expect(sink.flush())
        #expect(try Self.lines(moved + "/gateway.log") == ["first", "second"])
    }

    /// Reopening standard output is nothing at all.
    @Test func reopeningStandardOutputDoesNothing() async throws {
        let sink = try LogSink(destination: .stdout)
        #expect(sink.filePath == nil)
        try await sink.reopen()
    }
}
