import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif
import NetCore

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
    private let pending = Locked(Pending())
    private let handle: FileHandle
    private let capacity: Int
    /// The shortest time between two writes under load (nanoseconds): a line may wait this long for the lines after it.
    static let batchDelay: UInt64 = 10_000_000
    /// The largest buffer kept for reuse after a write: a burst's does not stay allocated.
    static let retainedBufferBytes = 1 << 20

    /// The lines waiting for the writer, as the bytes it writes (each line and its newline), so queueing a line is
    /// one copy and a batch goes out in one `write` with no per-line allocation.
    private struct Pending {
        var bytes: [UInt8] = []
        var lines = 0
        var scheduled = false
        var lastWrite: UInt64 = 0
        var dropped = 0
        /// The buffer the writer last emptied, kept for the next batch.
        var spare: [UInt8] = []
    }

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
    public var dropped: Int { pending.withLock { $0.dropped } }

    /// Queues one line (a newline is added).
    public func write(_ line: String) {
        var line = line
        line.withUTF8 { write(bytes: $0) }
    }

    /// Queues one line given as UTF-8 bytes (a newline is added).
    public func write(bytes line: UnsafeBufferPointer<UInt8>) {
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = pending.withLock { state -> UInt64? in
            guard state.lines < capacity else {
                state.dropped += 1
                return nil
            }
            state.bytes.append(contentsOf: line)
            state.bytes.append(0x0A)
            state.lines += 1
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
            let (taken, lines) = pending.withLock { state -> ([UInt8], Int) in
                let batch = (state.bytes, state.lines)
                state.bytes = state.spare
                state.spare = []
                state.lines = 0
                if batch.1 == 0 {
                    state.scheduled = false
                } else {
                    state.lastWrite = now
                }
                return batch
            }
            var batch = taken
            if lines == 0 {
                pending.withLock { $0.spare = batch }
                return
            }
            if !writeAll(batch) { pending.withLock { $0.dropped += lines } }
            batch.removeAll(keepingCapacity: batch.capacity <= Self.retainedBufferBytes)
            pending.withLock { state in
                if state.spare.capacity < batch.capacity { state.spare = batch }
            }
        }
    }

    /// Writes `bytes` to the output, waiting while it is full; false when it fails.
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        let fd = handle.fileDescriptor
        return bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }

    /// Waits until every queued line has been written, or `timeout` has passed: an output nobody reads (a full pipe)
    /// must not keep the process from exiting. Returns whether everything was written.
    @discardableResult
    public func flush(timeout: Duration = .seconds(2)) -> Bool {
        // `Duration.nanoseconds` clamps (a negative timeout is 0), so no timeout can overflow here.
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: timeout.nanoseconds))
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
