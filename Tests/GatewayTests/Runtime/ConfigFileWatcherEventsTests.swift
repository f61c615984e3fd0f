import Testing

@testable import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// How `ConfigFileWatcher` reads the events inotify queued: an overflow of the kernel's queue is a change (events
/// were lost), and other events count only as the watch says. The kernel's overflow cannot be caused on demand (the
/// watcher drains the queue as it fills), so its events are laid out here as `read` returns them.
@Suite struct ConfigFileWatcherEventsTests {
    /// Events as the kernel writes them: an `inotify_event` header, then the name padded with NULs to `len` bytes.
    private static func events(_ list: [(wd: Int32, mask: UInt32, name: String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for event in list {
            let name = Array(event.name.utf8)
            let length = name.isEmpty ? 0 : (name.count / 16 + 1) * 16
            var header = inotify_event()
            header.wd = event.wd
            header.mask = event.mask
            header.len = UInt32(length)
            withUnsafeBytes(of: &header) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: name + [UInt8](repeating: 0, count: length - name.count))
        }
        return bytes
    }

    private static func containsChange(_ bytes: [UInt8], watched: Set<String> = ["gateway.yaml"]) -> (Bool, [String]) {
        var seen: [String] = []
        let changed = bytes.withUnsafeBytes { events in
            ConfigFileWatcher.containsChange(events) { wd, _, name in
                seen.append(name)
                return wd == 1 && watched.contains(name)
            }
        }
        return (changed, seen)
    }

    @Test func aQueueOverflowIsTakenForAChange() {
        let (changed, seen) = Self.containsChange(Self.events([(-1, UInt32(IN_Q_OVERFLOW), "")]))
        #expect(changed)
        #expect(seen.isEmpty, "an overflow names no file and is not asked about")
    }

    @Test func anOverflowAfterUnrelatedEventsStillCounts() {
        let (changed, seen) = Self.containsChange(
            Self.events([
                (1, UInt32(IN_CLOSE_WRITE), "notes.txt"), (1, UInt32(IN_ATTRIB), "other.yaml"),
                (-1, UInt32(IN_Q_OVERFLOW), "")
            ]))
        #expect(changed)
        #expect(seen == ["notes.txt", "other.yaml"])
    }

    @Test func eventsCountOnlyAsTheWatchSays() {
        let unrelated = Self.events([(1, UInt32(IN_CLOSE_WRITE), "notes.txt"), (2, UInt32(IN_CREATE), "gateway.yaml")])
        #expect(Self.containsChange(unrelated) == (false, ["notes.txt", "gateway.yaml"]))
        let watched = Self.events([(1, UInt32(IN_CLOSE_WRITE), "notes.txt"), (1, UInt32(IN_MOVED_TO), "gateway.yaml")])
        #expect(Self.containsChange(watched) == (true, ["notes.txt", "gateway.yaml"]))
    }

    @Test func aTruncatedLastEventIsReadAsFarAsItGoesAndNothingTraps() {
        var bytes = Self.events([(1, UInt32(IN_CLOSE_WRITE), "gateway.yaml")])
        bytes.removeLast(10)
        #expect(Self.containsChange(bytes) == (false, ["gatewa"]))
        #expect(Self.containsChange(Array(bytes.prefix(7))) == (false, []))
        #expect(Self.containsChange([]) == (false, []))
    }
}
