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
///
/// A file is opened for appending (`O_APPEND`), so a rotation that copies and truncates it (logrotate's
/// `copytruncate`) goes on at its new end, and ``reopen()`` opens the path afresh after a rotation that moved it.
public final class LogSink: Sendable {
    public enum Destination: Sendable {
        case stdout
        case stderr
        case file(String)
    }

    private let queue = DispatchQueue(label: "moya-gateway.log-writer")
    private let pending = Locked(Pending())
    /// The descriptor written to; replaced by ``reopen()`` (a file destination's only).
    private let output: Locked<Int32>
    private let path: String?
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
        case .stdout:
            output = Locked(STDOUT_FILENO)
            path = nil
        case .stderr:
            output = Locked(STDERR_FILENO)
            path = nil
        case .file(let path):
            output = Locked(try Self.openForAppending(path))
            self.path = path
        }
        self.capacity = capacity
    }

    deinit {
        if path != nil { close(output.withLock { $0 }) }
    }

    /// Opens `path` for appending, creating it (mode 0644) when it does not exist. A pipe, FIFO or terminal
    /// (`/dev/stdout` in a container) is fine too.
    private static func openForAppending(_ path: String) throws(OpenError) -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OpenError(path: path, reason: String(cString: strerror(errno))) }
        return fd
    }

    /// A log file that could not be opened for appending.
    public struct OpenError: Error, CustomStringConvertible {
        public let path: String
        /// The system's reason (`Permission denied`, `No such file or directory`).
        public var reason: String = ""
        public var description: String {
            "logging.output: cannot open \(path) for appending" + (reason.isEmpty ? "" : ": \(reason)")
        }
    }

    /// The file lines go to, or nil for stdout and stderr.
    public var filePath: String? { path }

    /// Opens the file destination's path again, after a rotation moved the file away: lines queued before the call
    /// go to the old file, lines after it to the new one, and none is lost. Stdout and stderr are left as they are.
    /// When the path cannot be opened, lines go on to the old file and the error is thrown.
    public func reopen() async throws(OpenError) {
        guard let path else { return }
        let result: Result<Void, OpenError> = await withCheckedContinuation { continuation in
            queue.async { [self] in
                drain()
                do throws(OpenError) {
                    let fresh = try Self.openForAppending(path)
                    let old = output.withLock { fd in
                        defer { fd = fresh }
                        return fd
                    }
                    close(old)
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
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
        let fd = output.withLock { $0 }
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
