import Foundation

/// A process's memory as `/proc/PID/status` reports it, in bytes (0 when unreadable).
package enum ProcessMemory {
    /// Resident set size now (`VmRSS`).
    package static func resident(_ pid: Int32) -> Int { field("VmRSS:", of: pid) }

    /// The largest resident set size since the process started (`VmHWM`).
    package static func peakResident(_ pid: Int32) -> Int { field("VmHWM:", of: pid) }

    private static func field(_ name: String, of pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
            let kibibytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kibibytes * 1024
    }
}
