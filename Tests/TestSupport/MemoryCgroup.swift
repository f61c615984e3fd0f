import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A cgroup v1 memory controller group of its own, made for one test and removed by ``remove()``: a hard memory cap
/// for the processes moved into it, with the peak usage and the OOM kills it saw.
///
/// Needs the v1 memory hierarchy mounted at `/sys/fs/cgroup/memory` and the right to make groups in it (root); see
/// ``isAvailable``.
package final class MemoryCgroup {
    /// The v1 memory hierarchy's root.
    package static let root = "/sys/fs/cgroup/memory"

    /// Whether a group can be made here: the v1 memory hierarchy is mounted and writable.
    package static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: "\(root)/memory.limit_in_bytes") && access(root, W_OK) == 0
    }

    /// The group's directory.
    package let path: String

    /// Makes the group `name` (suffixed with this process's pid) capped at `limit` bytes, swap included, so that a
    /// process over the cap is killed rather than swapped out.
    package init(name: String, limit: Int) throws {
        path = "\(Self.root)/\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try write("memory.limit_in_bytes", String(limit))
        if FileManager.default.fileExists(atPath: "\(path)/memory.memsw.limit_in_bytes") {
            try write("memory.memsw.limit_in_bytes", String(limit))
        }
        // Charges made before the move (the process's start) move with it: anonymous and file pages.
        try? write("memory.move_charge_at_immigrate", "3")
    }

    /// Moves `pid` (all its threads) into the group.
    package func add(_ pid: Int32) throws { try write("cgroup.procs", String(pid)) }

    /// The cap in bytes, as the kernel rounded it.
    package var limit: Int { integer("memory.limit_in_bytes") }

    /// The group's peak charge in bytes since it was made.
    package var peakUsage: Int { integer("memory.max_usage_in_bytes") }

    /// How often a charge hit the cap (the kernel then reclaims, or kills).
    package var failures: Int { integer("memory.failcnt") }

    /// Processes the OOM killer killed in this group (`oom_kill` of `memory.oom_control`).
    package var oomKills: Int {
        let control = (try? String(contentsOfFile: "\(path)/memory.oom_control", encoding: .utf8)) ?? ""
        let line = control.split(separator: "\n").first { $0.hasPrefix("oom_kill ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// Removes the group. Processes still in it are moved back to the root group first (a group with members cannot
    /// be removed).
    package func remove() {
        let members = (try? String(contentsOfFile: "\(path)/cgroup.procs", encoding: .utf8)) ?? ""
        for pid in members.split(separator: "\n") {
            try? String(pid).write(toFile: "\(Self.root)/cgroup.procs", atomically: false, encoding: .utf8)
        }
        rmdir(path)
    }

    private func write(_ file: String, _ value: String) throws {
        try value.write(toFile: "\(path)/\(file)", atomically: false, encoding: .utf8)
    }

    private func integer(_ file: String) -> Int {
        let text = (try? String(contentsOfFile: "\(path)/\(file)", encoding: .utf8)) ?? ""
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
}
