import Foundation
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Watches a set of files for changes and reports each burst of changes once, after a quiet period (`serve --watch`,
/// `reload.watch`).
///
/// It watches the files' directories with inotify, on a thread of its own that sleeps in `poll` until something
/// happens (no polling of the files, nothing on the event loops), and takes a directory event for a change when it
/// names one of the watched files or a Kubernetes volume's hidden entries (`..data`, `..2024_…`): a ConfigMap or
/// Secret volume is updated by writing a new timestamped directory and swapping the `..data` symlink to it, which the
/// files themselves (symlinks through `..data`) never see. Writes that end with a close, renames, creations,
/// deletions and attribute changes count; plain writes to a file still open (a log file beside the configuration)
/// do not. Once events stop for the debounce, or after ten debounces of events that do not stop, `onChange` is called
/// on the watcher's thread; the files to watch are then set again with ``watch(_:)``.
package final class ConfigFileWatcher: Sendable {
    private let inotify: Int32
    /// The read and write ends of the pipe that stops the thread.
    private let stopPipe: (read: Int32, write: Int32)
    private let state: Locked<State>
    private let onChange: @Sendable () -> Void

    private struct State {
        /// Watch descriptor → directory.
        var directories: [Int32: String] = [:]
        /// Directory → names in it that count (the watched files' names).
        var names: [String: Set<String>] = [:]
        var debounce: Duration
        var stopped = false
    }

    /// - Parameters:
    ///   - debounce: how long events must stop before `onChange` (see ``setDebounce(_:)``).
    ///   - onChange: called once per burst of changes, on the watcher's thread.
    /// - Throws: when inotify or the pipe cannot be had (too many instances or descriptors).
    package init(debounce: Duration, onChange: @escaping @Sendable () -> Void) throws {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw ConfigFileWatcherError("inotify_init1 failed (errno \(errno))") }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            close(fd)
            throw ConfigFileWatcherError("pipe failed (errno \(errno))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        inotify = fd
        stopPipe = (ends[0], ends[1])
        state = Locked(State(debounce: debounce))
        self.onChange = onChange
        let thread = Thread { [self] in run() }
        thread.name = "moya-gateway-config-watch"
        thread.start()
    }

    deinit {
        close(inotify)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Watches `files` (and only them) from now on: their directories get a watch, directories no longer needed lose
    /// theirs. Paths are used as given (relative ones against the working directory).
    /// - Returns: the directories that could not be watched (missing, not readable), for the log.
    @discardableResult
    package func watch(_ files: Set<String>) -> [String] {
        var wanted: [String: Set<String>] = [:]
        func add(_ path: String) {
            let directory = (path as NSString).deletingLastPathComponent
            wanted[directory.isEmpty ? "." : directory, default: []].insert((path as NSString).lastPathComponent)
        }
        for file in files {
            add(file)
            // A symlink to a file elsewhere: that file's directory too (not a Kubernetes volume's `..` data
            // directories, which the `..data` swap beside the link already stands for).
            let resolved = (file as NSString).resolvingSymlinksInPath
            let resolvedDirectory = (resolved as NSString).deletingLastPathComponent
            if resolved != file, !(resolvedDirectory as NSString).lastPathComponent.hasPrefix("..") { add(resolved) }
        }
        return state.withLock { state in
            var failed: [String] = []
            let mask = UInt32(
                IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB
                    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
            var kept: [Int32: String] = [:]
            for (directory, _) in wanted {
                // Adding a watch again for a directory already watched returns its descriptor.
                let wd = inotify_add_watch(inotify, directory, mask)
                if wd < 0 { failed.append(directory) } else { kept[wd] = directory }
            }
            for (wd, _) in state.directories where kept[wd] == nil { inotify_rm_watch(inotify, wd) }
            state.directories = kept
            state.names = wanted
            return failed
        }
    }

    /// Changes the quiet period (a reload that changed `reload.debounce`).
    package func setDebounce(_ debounce: Duration) {
        state.withLock { $0.debounce = debounce }
    }

    /// Stops the thread (it ends within its current wait); `onChange` is not called again.
    package func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    // MARK: The thread

    private func run() {
        var pending: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)?
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var timeout: Int32 = -1
            let debounce = state.withLock { $0.debounce }
            if let pending {
                let now = ContinuousClock.now
                let due = min(pending.last + debounce, pending.first + debounce * 10)
                timeout = due <= now ? 0 : Int32(clamping: (due - now).milliseconds + 1)
            }
            var fds = [
                pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)
            ]
            let ready = poll(&fds, 2, timeout)
            if ready < 0 && errno != EINTR { return }
            if fds[1].revents != 0 || state.withLock({ $0.stopped }) { return }
            if ready > 0 && fds[0].revents != 0 && readEvents(into: &buffer) {
                let now = ContinuousClock.now
                pending = (pending?.first ?? now, now)
            }
            if let current = pending {
                let now = ContinuousClock.now
                if now >= current.last + debounce || now >= current.first + debounce * 10 {
                    pending = nil
                    if !state.withLock({ $0.stopped }) { onChange() }
                }
            }
        }
    }

    /// Reads every queued event; whether one of them counts as a change.
    private func readEvents(into buffer: inout [UInt8]) -> Bool {
        var relevant = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count <= 0 { return relevant }
            let changed = buffer.withUnsafeBytes { bytes in
                Self.containsChange(UnsafeRawBufferPointer(rebasing: bytes[..<count])) { wd, mask, name in
                    // Events of a watch removed by `watch(_:)` (its IN_IGNORED, say) are not changes.
                    state.withLock { state in
                        guard let directory = state.directories[wd] else { return false }
                        if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 { return true }
                        return name.hasPrefix("..") || state.names[directory]?.contains(name) == true
                    }
                }
            }
            if changed { relevant = true }
        }
    }

    /// Whether the inotify events in `events` (as `read` returned them) hold a change: an overflow of the kernel's
    /// queue (`IN_Q_OVERFLOW`: events were lost, so one of them may have been a change; a reload too many beats a
    /// change missed), or an event `counts` takes for one (given its watch descriptor, mask and name). Every event
    /// is walked (a truncated last one is read as far as it goes).
    static func containsChange(
        _ events: UnsafeRawBufferPointer, counts: (_ wd: Int32, _ mask: UInt32, _ name: String) -> Bool
    ) -> Bool {
        var relevant = false
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= events.count {
            let event = events.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
            let nameStart = offset + headerSize
            let nameEnd = min(nameStart + Int(event.len), events.count)
            offset = nameEnd
            if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                relevant = true
                continue
            }
            let name = String(decoding: events[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
            if counts(event.wd, event.mask, name) { relevant = true }
        }
        return relevant
    }
}

/// Why a ``ConfigFileWatcher`` could not start.
package struct ConfigFileWatcherError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}
