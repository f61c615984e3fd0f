#if canImport(Glibc)
import Glibc
#endif

/// A log line built as UTF-8 bytes: pieces are copied in as they come, numbers and the timestamp written digit by
/// digit, with no intermediate strings.
struct LogLineBuffer {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    /// Appends a literal as it is.
    mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends `text` as it is.
    mutating func append(text: String) {
        if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// Appends `text` as a JSON string literal; text with nothing to escape is copied as it is.
    mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        append(text: ErrorBody.escape(text))
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` as a JSON string literal, or `null`.
    mutating func appendQuotedOrNull(_ text: String?) {
        if let text { appendQuoted(text) } else { append("null") }
    }

    /// Appends the decimal digits of `value`.
    mutating func appendDecimal(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(value.magnitude)
    }

    private mutating func appendDigits(_ value: UInt) {
        if value >= 10 { appendDigits(value / 10) }
        bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }

    /// Appends `value` as exactly `width` digits (zero-padded; higher digits dropped).
    private mutating func appendDigits(_ value: Int, width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor &*= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }

    /// Appends milliseconds with three decimals (rounded to the microsecond), or `null`.
    mutating func appendMilliseconds(_ duration: Duration?) {
        guard let duration else { return append("null") }
        let attoseconds = duration.attoseconds
        // One 128-bit number, divided as 64 bits when it fits (`components` costs a 128-bit division).
        let nanoseconds =
            Int64(exactly: attoseconds).map { $0 / 1_000_000_000 } ?? Int64(clamping: attoseconds / 1_000_000_000)
        let micros = (nanoseconds.magnitude &+ 500) / 1000
        if nanoseconds < 0 && micros > 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(UInt(micros / 1000))
        bytes.append(UInt8(ascii: "."))
        appendDigits(Int(micros % 1000), width: 3)
    }

    /// Appends now in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (years clamped to 0…9999).
    mutating func appendTimestamp() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let days = Int(now.tv_sec).quotientAndRemainder(dividingBy: 86_400)
        let (day, secondOfDay) = days.remainder < 0 ? (days.quotient - 1, days.remainder + 86_400) : days
        let (year, month, dayOfMonth) = LogLineBuffer.civilDate(daysSinceEpoch: day)
        appendDigits(min(max(year, 0), 9999), width: 4)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(dayOfMonth, width: 2)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, width: 2)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, width: 2)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, width: 2)
        bytes.append(UInt8(ascii: "."))
        appendDigits(Int(now.tv_nsec / 1_000_000), width: 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`): integer
    /// arithmetic, no time-zone lookup or lock.
    static func civilDate(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
