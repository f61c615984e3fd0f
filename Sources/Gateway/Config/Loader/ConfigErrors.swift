/// One problem found while loading a configuration file.
package struct ConfigProblem: Sendable, Hashable, CustomStringConvertible {
    /// The file as given to the loader.
    package var file: String
    /// 1-based line.
    package var line: Int
    /// 1-based column, set only for YAML syntax errors.
    package var column: Int?
    /// The key path, `server.limits.max_body_bytes` or `routes[0].upstream`; `(file)` or `(yaml)` when none applies.
    package var keyPath: String
    /// What is wrong. Never contains a value that came from the environment.
    package var reason: String

    package init(file: String, line: Int, column: Int? = nil, keyPath: String, reason: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.reason = reason
    }

    /// `FILE:LINE: key.path: reason`, always (a YAML syntax error's key path is `(yaml)`; its column is in the reason),
    /// on one line: control characters from the file (a quoted key or value may hold a newline or a tab) are escaped.
    package var description: String {
        ConfigProblem.escapingControls("\(file):\(line): \(keyPath): \(reason)")
    }

    /// `text` with its control characters written as `\n`, `\r`, `\t` or `\u{…}`.
    private static func escapingControls(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped.append(contentsOf: "\\n".unicodeScalars)
            case "\r": escaped.append(contentsOf: "\\r".unicodeScalars)
            case "\t": escaped.append(contentsOf: "\\t".unicodeScalars)
            case _ where isControl(scalar):
                escaped.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

/// Every problem found in a configuration file, in file order.
package struct ConfigErrors: Error, Sendable, Hashable, CustomStringConvertible {
    package var problems: [ConfigProblem]

    package init(_ problems: [ConfigProblem]) { self.problems = problems }

    /// One problem per line.
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}

/// Parsers for the file's duration and size notations.
package enum ConfigValue {
    /// `250ms`, `10s`, `2m` (also fractional `1.5s`); `0` alone is zero. `nil` when malformed.
    package static func parseDuration(_ text: String) -> Duration? {
        let trimmed = text.trimmingSpaces()
        if trimmed == "0" { return .zero }
        let units: [(String, Int64)] = [("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000)]
        for (unit, nanosPerUnit) in units where trimmed.hasSuffix(unit) {
            let number = String(trimmed.dropLast(unit.count))
            guard let nanos = scaledInteger(number, by: nanosPerUnit) else { return nil }
            return .nanoseconds(nanos)
        }
        return nil
    }

    /// `1048576`, `512KiB`, `10MiB` (also `KB`/`MB` = 1000-based, `GiB`). `nil` when malformed or overflowing.
    package static func parseSize(_ text: String) -> Int64? {
        let trimmed = text.trimmingSpaces()
        let units: [(String, Int64)] = [
            ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10),
            ("GB", 1_000_000_000), ("MB", 1_000_000), ("KB", 1000), ("B", 1)
        ]
        for (unit, factor) in units where trimmed.hasSuffix(unit) {
            return scaledInteger(String(trimmed.dropLast(unit.count)).trimmingSpaces(), by: factor)
        }
        return scaledInteger(trimmed, by: 1)
    }

    /// A size in the form ``parseSize(_:)`` reads, for printing: `1GiB`, `8MiB`, `64KiB`, else bytes.
    static func sizeDescription(_ bytes: Int64) -> String {
        for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes > 0 && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return String(bytes)
    }

    /// A decimal number (digits, optional `.digits`) times `factor`, as an integer; `nil` on malformed input,
    /// overflow, or a fractional remainder below one unit.
    static func scaledInteger(_ text: String, by factor: Int64) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 18,
            whole.allSatisfy({ $0.isASCII && $0.isNumber }), let wholeValue = Int64(whole)
        else { return nil }
        var (result, overflow) = wholeValue.multipliedReportingOverflow(by: factor)
        guard !overflow else { return nil }
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.count <= 9, fraction.allSatisfy({ $0.isASCII && $0.isNumber }),
                let fractionValue = Int64(fraction)
            else { return nil }
            var divisor: Int64 = 1
            for _ in 0..<fraction.count { divisor *= 10 }
            let (scaled, overflow2) = fractionValue.multipliedReportingOverflow(by: factor)
            guard !overflow2 else { return nil }
            (result, overflow) = result.addingReportingOverflow(scaled / divisor)
            guard !overflow else { return nil }
        }
        return result
    }
}

extension String {
    func trimmingSpaces() -> String {
        var result = Substring(self)
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return String(result)
    }
}

extension Duration {
    /// `250ms`, `10s`, `2m` form for printing.
    var configDescription: String {
        let ms = milliseconds
        if ms != 0, ms % 60_000 == 0 { return "\(ms / 60_000)m" }
        if ms % 1000 == 0 { return "\(ms / 1000)s" }
        return "\(ms)ms"
    }
}
