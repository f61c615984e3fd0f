import Foundation
import Locking
import NetCore

#if canImport(Glibc)
import Glibc
#endif

/// Where log lines go: a dedicated writer thread drains a bounded queue, so a slow or full output never blocks a
/// request. Lines beyond the bound are dropped and counted.
///
/// A line logged when the writer has not written for ``batchDelay`` is written at once; otherwise the writer wakes
/// ``batchDelay`` after its last write, for all the lines since. Under load one wake-up and one `write` then carry a
/// few hundred access-log lines, where waking it per line cost the event loop a context switch and two system calls
/// per request; a quiet gateway's lines still appear at once.
///
/// A file is opened for appending (`O_APPEND`), so a rotation that copies and truncates it (logrotate's
/// `copytruncate`) goes on at its new end, and ``reopen()`` opens the path afresh after a rotation that moved it. An
/// output that cannot be opened within ``openTimeout`` (a FIFO nobody reads, an open that hangs) is an error, at the
/// start and at a reopen, rather than a wait for as long as it takes.
///
/// Lines dropped (the queue full behind a stuck output, or a write that failed: a full disk) are counted
/// (``dropped``) and reported on stderr, at most once per ``dropReportInterval``, from a thread of their own (the writer
/// may be the one stuck).
package final class LogSink: Sendable {
    package enum Destination: Sendable {
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
    /// Where the drop reports are written from (see ``reportDrops()``).
    private let reportQueue = DispatchQueue(label: "moya-gateway.log-drop-report")
    /// The stderr lines of the drop reports go through this (stderr's descriptor, or a test's).
    private let reportOutput: Int32
    /// The longest wait for an output to open.
    package static let openTimeout: Duration = .seconds(1)
    /// The shortest time between two reports of dropped lines on stderr (nanoseconds).
    static let dropReportInterval: UInt64 = 60_000_000_000
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
        /// Drops not reported on stderr yet, the last one's cause, and when the last report went (0: never).
        var unreported = 0
        var dropCause = ""
        var lastReport: UInt64 = 0
        var reportScheduled = false
        /// The buffer the writer last emptied, kept for the next batch.
        var spare: [UInt8] = []
    }

    /// - Parameter reportOutput: where drop reports go (stderr unless a test says otherwise).
    /// - Throws: ``OpenError`` when a file destination cannot be opened for appending within ``openTimeout``.
    package init(destination: Destination, capacity: Int = 65_536, reportOutput: Int32 = STDERR_FILENO)
        throws(OpenError)
    {
        self.reportOutput = reportOutput
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
    /// (`/dev/stdout` in a container) is fine too; a FIFO must have a reader within `timeout`, and an open that hangs
    /// (a stale network mount) is given up after it.
    static func openForAppending(_ path: String, timeout: Duration = LogSink.openTimeout) throws(OpenError) -> Int32 {
        let attempt = OpenAttempt()
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: timeout.nanoseconds))
        let waited = "waited \(Self.seconds(timeout))"
        // On a thread of its own: `open` itself may block (it does not for a FIFO, opened non-blocking below).
        DispatchQueue.global().async { attempt.run(path, until: deadline) }
        guard attempt.done.wait(timeout: deadline + .milliseconds(100)) == .success, let outcome = attempt.finish()
        else {
            attempt.abandon()
            throw OpenError(path: path, reason: "the open did not return (\(waited))")
        }
        switch outcome {
        case .success(let fd): return fd
        case .failure(let code):
            throw OpenError(
                path: path,
                reason: code == ENXIO
                    ? "no process has the FIFO open for reading (\(waited))"
                    : String(cString: strerror(code)))
        }
    }

    /// `duration` as `1s`, `1.5s`.
    private static func seconds(_ duration: Duration) -> String {
        let value = duration.seconds
        return value == value.rounded() ? "\(Int(value))s" : "\(value)s"
    }

    /// One `open` of ``openForAppending(_:timeout:)`` on its helper thread; a descriptor that comes after the caller
    /// gave up is closed, by whichever of the two comes last.
    private final class OpenAttempt: @unchecked Sendable {
        enum Outcome {
            case success(Int32)
            case failure(Int32)
        }

        private struct State {
            var outcome: Outcome?
            var abandoned = false
        }

        let done = DispatchSemaphore(value: 0)
        private let state = Locked(State())

        func run(_ path: String, until deadline: DispatchTime) {
            var fd: Int32
            var failure: Int32 = 0
            while true {
                // Non-blocking, so that a FIFO without a reader fails (ENXIO) instead of waiting in `open`.
                fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0o644)
                failure = fd >= 0 ? 0 : errno
                if fd >= 0 || failure != ENXIO || DispatchTime.now() >= deadline { break }
                usleep(20_000)
            }
            let outcome: Outcome
            if fd >= 0 {
                // Writes block again (the writer thread waits for a slow reader; the queue bounds the rest).
                let flags = fcntl(fd, F_GETFL)
                if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
                outcome = .success(fd)
            } else {
                outcome = .failure(failure)
            }
            let abandoned = state.withLock { state -> Bool in
                state.outcome = outcome
                return state.abandoned
            }
            if abandoned, fd >= 0 { close(fd) }
            done.signal()
        }

        /// The outcome, once ``run(_:until:)`` has given it.
        func finish() -> Outcome? { state.withLock { $0.outcome } }

        /// The caller stopped waiting: the descriptor, whenever it comes, is closed.
        func abandon() {
            let outcome = state.withLock { state -> Outcome? in
                state.abandoned = true
                return state.outcome
            }
            if case .success(let fd) = outcome { close(fd) }
        }
    }

    /// A log file that could not be opened for appending.
    package struct OpenError: Error, CustomStringConvertible {
        package let path: String
        /// The system's reason (`Permission denied`, `No such file or directory`).
        package var reason: String = ""
        package var description: String {
            "logging.output: cannot open \(path) for appending" + (reason.isEmpty ? "" : ": \(reason)")
        }
    }

    /// The file lines go to, or nil for stdout and stderr.
    package var filePath: String? { path }

    /// Opens the file destination's path again, after a rotation moved the file away: lines queued before the new
    /// file is open go to the old file, lines after it to the new one, and none is lost. Stdout and stderr are left as
    /// they are. When the path cannot be opened within ``openTimeout``, lines go on to the old file and the error is
    /// thrown.
    package func reopen() async throws(OpenError) {
        guard let path else { return }
        let result: Result<Void, OpenError> = await withCheckedContinuation { continuation in
            // Opened on a thread of its own (up to `openTimeout`), so the writer goes on meanwhile.
            DispatchQueue.global().async { [self] in
                let fresh: Int32
                do throws(OpenError) {
                    fresh = try Self.openForAppending(path)
                } catch {
                    continuation.resume(returning: .failure(error))
                    return
                }
                queue.async { [self] in
                    drain()
                    let old = output.withLock { fd in
                        defer { fd = fresh }
                        return fd
                    }
                    close(old)
                    continuation.resume(returning: .success(()))
                }
            }
        }
        try result.get()
    }

    /// Lines dropped because the writer could not keep up.
    package var dropped: Int { pending.withLock { $0.dropped } }

    /// Queues one line (a newline is added).
    package func write(_ line: String) {
        var line = line
        line.withUTF8 { write(bytes: $0) }
    }

    /// Queues one line given as UTF-8 bytes (a newline is added).
    package func write(bytes line: UnsafeBufferPointer<UInt8>) {
        let now = DispatchTime.now().uptimeNanoseconds
        var scheduleReport = false
        defer { if scheduleReport { reportDrops() } }
        let wait = pending.withLock { state -> UInt64? in
            guard state.lines < capacity else {
                state.dropped += 1
                state.unreported += 1
                state.dropCause = "the output takes lines more slowly than they come (queue of \(capacity) full)"
                if !state.reportScheduled { scheduleReport = true }
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
            if let failure = writeAll(batch) {
                let schedule = pending.withLock { state -> Bool in
                    state.dropped += lines
                    state.unreported += lines
                    state.dropCause = "write: \(String(cString: strerror(failure)))"
                    return !state.reportScheduled
                }
                if schedule { reportDrops() }
            }
            batch.removeAll(keepingCapacity: batch.capacity <= Self.retainedBufferBytes)
            pending.withLock { state in
                if state.spare.capacity < batch.capacity { state.spare = batch }
            }
        }
    }

    /// Writes `bytes` to the output, waiting while it is full; the `errno` of a write that failed, nil when all went.
    private func writeAll(_ bytes: [UInt8]) -> Int32? {
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
                    return written < 0 ? errno : ENOSPC
                }
            }
            return nil
        }
    }

    /// Reports the lines dropped since the last report on stderr (one line: how many, since when, and why), now or,
    /// when the last report is less than ``dropReportInterval`` old, once it is; from ``reportQueue``, so that a stuck
    /// writer (or a stuck stderr) holds nobody else up.
    private func reportDrops() {
        let now = DispatchTime.now().uptimeNanoseconds
        let delay = pending.withLock { state -> UInt64? in
            guard !state.reportScheduled else { return nil }
            state.reportScheduled = true
            let since = now &- state.lastReport
            return state.lastReport == 0 || since >= Self.dropReportInterval ? 0 : Self.dropReportInterval - since
        }
        guard let delay else { return }
        reportQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
            let (count, cause, first) = pending.withLock { state -> (Int, String, Bool) in
                defer {
                    state.unreported = 0
                    state.reportScheduled = false
                    state.lastReport = DispatchTime.now().uptimeNanoseconds
                }
                return (state.unreported, state.dropCause, state.lastReport == 0)
            }
            guard count > 0 else { return }
            let output = path.map { "logging.output \($0)" } ?? "logging.output"
            var line =
                "moya-gateway: \(output): \(count) log line\(count == 1 ? "" : "s") dropped"
                + (first ? "" : " in the last minute")
                + " (\(cause)); counted in moya_gateway_log_lines_dropped_total\n"
            line.withUTF8 { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = Glibc.write(reportOutput, bytes.baseAddress! + offset, bytes.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        break
                    }
                }
            }
        }
    }

    /// Waits until every queued line has been written, or `timeout` has passed: an output nobody reads (a full pipe)
    /// must not keep the process from exiting. Returns whether everything was written.
    @discardableResult
    package func flush(timeout: Duration = .seconds(2)) -> Bool {
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
