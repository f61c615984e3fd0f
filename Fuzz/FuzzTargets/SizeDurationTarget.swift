import Gateway

/// `size-duration`: a string through the configuration's size and duration notations (`ConfigValue.parseSize`,
/// `ConfigValue.parseDuration`): `10MiB`, `512KiB`, `1.5s`, `250ms`, `2m`.
///
/// Checked: sizes and durations are never negative; surrounding spaces and tabs change nothing; a size written back in
/// bytes (`12345`, `12345B`) and a duration written back in nanoseconds-exact units (`ms` when whole milliseconds)
/// parse to the same value (sizes up to 18 digits, the most the notation reads); a plain number of digits is its own
/// size.
enum SizeDurationTarget {
    static let target = FuzzTarget(
        name: "size-duration",
        summary: "size and duration notations: non-negative, whitespace-insensitive, round trips",
        maxLength: 256, dictionary: "yaml.dict", run: run)

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let text = FuzzBytes.string(bytes)
        let size = ConfigValue.parseSize(text)
        let duration = ConfigValue.parseDuration(text)
        try check(ConfigValue.parseSize(" \t" + text + "\t ") == size, "surrounding whitespace changes the size")
        try check(
            ConfigValue.parseDuration(" \t" + text + " \t") == duration, "surrounding whitespace changes the duration")
        if let size {
            try check(size >= 0, "negative size \(size)")
            // The notation reads at most 18 digits (999 PB); a larger size from a unit has no byte spelling.
            if String(size).count <= 18 {
                try check(
                    ConfigValue.parseSize(String(size)) == size, "size \(size) written in bytes parses differently")
                try check(ConfigValue.parseSize("\(size)B") == size, "size \(size)B parses differently")
            }
        }
        let trimmed = text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        if !trimmed.isEmpty, trimmed.count <= 18, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) {
            try check(
                size == Int64(String(trimmed)), "digits \(String(trimmed)) read as size \(String(describing: size))")
        }
        if let duration {
            try check(duration >= .zero, "negative duration \(duration)")
            let (seconds, attoseconds) = duration.components
            let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            if !nanoseconds.overflow {
                let total = nanoseconds.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
                if !total.overflow, total.partialValue % 1_000_000 == 0 {
                    let milliseconds = total.partialValue / 1_000_000
                    try check(
                        ConfigValue.parseDuration("\(milliseconds)ms") == duration,
                        "duration \(duration) written as \(milliseconds)ms parses differently")
                }
            }
        }
    }
}
