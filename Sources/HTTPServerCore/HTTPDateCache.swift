import NetCore

#if canImport(Glibc)
import Glibc
#endif

/// The `Date` header value (IMF-fixdate), formatted at most once per second per loop; the wall clock is read only when
/// the loop's ``EventLoop/roundTime`` has passed the next second's start.
final class HTTPDateCache {
    private let loop: EventLoop
    // Loop-confined, and only ever read or assigned whole: no dynamic exclusivity check.
    /// The loop's monotonic time at which the cached second ends.
    @exclusivity(unchecked) private var validUntil: UInt64 = 0
    @exclusivity(unchecked) private var second: time_t = 0
    @exclusivity(unchecked) private var cached = ""
    @exclusivity(unchecked) private var cachedFieldLine: [UInt8] = []

    init(loop: EventLoop) {
        self.loop = loop
    }

    var current: String {
        refresh()
        return cached
    }

    /// The whole HTTP/1 header line, `Date: <value> CRLF`, ready to append to a head.
    var currentFieldLine: [UInt8] {
        refresh()
        return cachedFieldLine
    }

    private func refresh() {
        let monotonic = loop.roundTime
        guard monotonic >= validUntil else { return }
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        validUntil = monotonic &+ UInt64(1_000_000_000 - Int(wall.tv_nsec))
        let now = wall.tv_sec
        guard now != second else { return }
        second = now
        cached = HTTPDateCache.format(now)
        cachedFieldLine = Array("Date: \(cached)\r\n".utf8)
    }

    static func format(_ time: time_t) -> String {
        var seconds = time
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        return
            "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
