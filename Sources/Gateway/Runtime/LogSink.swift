import Foundation
import Synchronization

/// Where log lines go: a dedicated writer thread drains a bounded queue, so a slow or full output never blocks a
/// request. Lines beyond the bound are dropped and counted.
///
/// A line logged when the writer has not written for ``batchDelay`` is written at once; otherwise the writer wakes
/// ``batchDelay`` after its last write, for all the lines since. Under load one wake-up and one `write` then carry a
/// few hundred access-log lines, where waking it per line cost the event loop a context switch and two system calls
/// per request; a quiet gateway's lines still appear at once.
public final class LogSink: Sendable {
    public enum Destination: Sendable {
        case stdout
        case stderr
        case file(String)
    }

    private let queue = DispatchQueue(label: "moya-gateway.log-writer")
    private let pending = Mutex<(lines: [String], scheduled: Bool, lastWrite: UInt64)>(([], false, 0))
    private let handle: FileHandle
    private let capacity: Int
    private let droppedCount = Mutex(0)
    /// The shortest time between two writes under load (nanoseconds): a line may wait this long for the lines after it.
    static let batchDelay: UInt64 = 10_000_000

    /// - Throws: ``OpenError`` when a file destination cannot be opened for appending.
    public init(destination: Destination, capacity: Int = 65_536) throws(OpenError) {
        switch destination {
        case .stdout: handle = FileHandle.standardOutput
        case .stderr: handle = FileHandle.standardError
        case .file(let path):
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            guard let file = FileHandle(forWritingAtPath: path) else { throw OpenError(path: path) }
            // Appends to a regular file; a pipe, FIFO or terminal (`/dev/stdout` in a container) cannot seek, and
            // needs not (the deprecated `seekToEndOfFile()` traps there).
            _ = try? file.seekToEnd()
            handle = file
        }
        self.capacity = capacity
    }

    /// A log file that could not be opened for appending.
    public struct OpenError: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "logging.output: cannot open \(path) for appending" }
    }

    /// Lines dropped because the writer could not keep up.
    public var dropped: Int { droppedCount.withLock { $0 } }

    /// Queues one line (a newline is added).
    public func write(_ line: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = pending.withLock { state -> UInt64? in
            guard state.lines.count < capacity else {
                droppedCount.withLock { $0 += 1 }
                return nil
            }
            state.lines.append(line)
            if state.scheduled { return nil }
            state.scheduled = true
            let sinceWrite = now &- state.lastWrite
            return sinceWrite >= Self.batchDelay ? 0 : Self.batchDelay - sinceWrite
        }
        guard let wait else { return }
        if wait == 0 {
            queue.async { [self] in drain() }
        } else {
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(wait))) { [self] in drain() }
        }
    }

    private func drain() {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let lines = pending.withLock { state -> [String] in
                let lines = state.lines
                state.lines.removeAll(keepingCapacity: true)
                if lines.isEmpty {
                    state.scheduled = false
                } else {
                    state.lastWrite = now
                }
                return lines
            }
            if lines.isEmpty { return }
            var data = Data()
            for line in lines {
                data.append(contentsOf: line.utf8)
                data.append(0x0A)
            }
            do { try handle.write(contentsOf: data) } catch { droppedCount.withLock { $0 += lines.count } }
        }
    }

    /// Waits until every queued line has been written, or `timeout` has passed: an output nobody reads (a full pipe)
    /// must not keep the process from exiting. Returns whether everything was written.
    @discardableResult
    public func flush(timeout: Duration = .seconds(2)) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        repeat {
            let written = DispatchSemaphore(value: 0)
            queue.async { [self] in
                drain()
                written.signal()
            }
            if written.wait(timeout: deadline) == .timedOut { return false }
        } while pending.withLock({ $0.scheduled })
        return true
    }
}
