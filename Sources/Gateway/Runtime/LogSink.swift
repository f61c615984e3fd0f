import Foundation
import Synchronization

/// Where log lines go: a dedicated writer thread drains a bounded queue, so a slow or full output never blocks a
/// request. Lines beyond the bound are dropped and counted.
public final class LogSink: Sendable {
    public enum Destination: Sendable {
        case stdout
        case stderr
        case file(String)
    }

    private let queue = DispatchQueue(label: "moya-gateway.log-writer")
    private let pending = Mutex<(lines: [String], scheduled: Bool)>(([], false))
    private let handle: FileHandle
    private let capacity: Int
    private let droppedCount = Mutex(0)

    public init(destination: Destination, capacity: Int = 65_536) {
        switch destination {
        case .stdout: handle = FileHandle.standardOutput
        case .stderr: handle = FileHandle.standardError
        case .file(let path):
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            let file = FileHandle(forWritingAtPath: path) ?? FileHandle.standardOutput
            file.seekToEndOfFile()
            handle = file
        }
        self.capacity = capacity
    }

    /// Lines dropped because the writer could not keep up.
    public var dropped: Int { droppedCount.withLock { $0 } }

    /// Queues one line (a newline is added).
    public func write(_ line: String) {
        let schedule = pending.withLock { state -> Bool in
            guard state.lines.count < capacity else {
                droppedCount.withLock { $0 += 1 }
                return false
            }
            state.lines.append(line)
            if state.scheduled { return false }
            state.scheduled = true
            return true
        }
        if schedule { queue.async { [self] in drain() } }
    }

    private func drain() {
        while true {
            let lines = pending.withLock { state -> [String] in
                let lines = state.lines
                state.lines.removeAll(keepingCapacity: true)
                if lines.isEmpty { state.scheduled = false }
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

    /// Waits until every queued line has been written.
    public func flush() {
        queue.sync {}
        while pending.withLock({ $0.scheduled }) { queue.sync {} }
    }
}
