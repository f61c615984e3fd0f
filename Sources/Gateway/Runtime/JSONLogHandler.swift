import Foundation
import Logging

/// A swift-log handler writing one JSON object per line (`ts`, `level`, `msg`, metadata) to a ``LogSink``, or plain
/// text when the configuration says `format: text`. Values of metadata keys named like secrets are redacted. The
/// level, format and redacted names come from shared ``LogSettings``, so a reload changes them for every logger.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    /// The settings' level, unless this logger was given its own.
    public var logLevel: Logger.Level {
        get { levelOverride ?? settings.level }
        set { levelOverride = newValue }
    }
    private var levelOverride: Logger.Level?
    private let sink: LogSink
    private let settings: LogSettings

    public init(sink: LogSink, settings: LogSettings) {
        self.sink = sink
        self.settings = settings
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        if let access = AccessLogLine.carried(by: event) {
            // The access log's line: its fields at the top level, in a fixed order, without the logger's metadata.
            sink.write(settings.json ? access.json() : access.text())
            return
        }
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let timestamp = JSONLogHandler.timestamp()
        let redactor = settings.redactor
        if settings.json {
            var line = "{\"ts\":\"\(timestamp)\",\"level\":\"\(event.level.rawValue)\",\"msg\":\(JSONLogHandler.quote(event.message.description))"
            for key in fields.keys.sorted() {
                line += ",\(JSONLogHandler.quote(key)):\(JSONLogHandler.encode(fields[key]!, key: key, redactor: redactor))"
            }
            sink.write(line + "}")
        } else {
            let rendered = fields.keys.sorted().map { "\($0)=\(redactor.shouldRedact(name: $0) ? HeaderRedactor.placeholder : "\(fields[$0]!)")" }
            sink.write("\(timestamp) \(event.level.rawValue) \(event.message) \(rendered.joined(separator: " "))")
        }
    }

    static func encode(_ value: Logger.Metadata.Value, key: String, redactor: HeaderRedactor) -> String {
        if redactor.shouldRedact(name: key) { return quote(HeaderRedactor.placeholder) }
        switch value {
        case .string(let string):
            return quote(string)
        case .stringConvertible(let convertible):
            if let number = convertible as? any BinaryInteger { return "\(number)" }
            if let number = convertible as? Double { return number.isFinite ? "\(number)" : "null" }
            if let flag = convertible as? Bool { return flag ? "true" : "false" }
            return quote(convertible.description)
        case .array(let values):
            return "[" + values.map { encode($0, key: "", redactor: redactor) }.joined(separator: ",") + "]"
        case .dictionary(let dictionary):
            return "{" + dictionary.keys.sorted().map { "\(quote($0)):\(encode(dictionary[$0]!, key: $0, redactor: redactor))" }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal.
    static func quote(_ text: String) -> String { "\"" + ErrorBody.escape(text) + "\"" }

    /// Appends `text` as a JSON string literal.
    static func appendQuoted(_ text: String, to line: inout String) {
        line += "\""
        line += ErrorBody.escape(text)
        line += "\""
    }

    /// Now in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (years clamped to 0…9999), written digit by digit.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = min(max(Int(parts.tm_year) + 1900, 0), 9999)
        let millis = Int(now.tv_nsec / 1_000_000)
        return String(unsafeUninitializedCapacity: 24) { buffer in
            var count = 0
            func put(_ value: Int, width: Int, then separator: UInt8) {
                var digits = value
                for position in stride(from: width - 1, through: 0, by: -1) {
                    buffer[count + position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digits % 10)
                    digits /= 10
                }
                buffer[count + width] = separator
                count += width + 1
            }
            put(year, width: 4, then: UInt8(ascii: "-"))
            put(Int(parts.tm_mon) + 1, width: 2, then: UInt8(ascii: "-"))
            put(Int(parts.tm_mday), width: 2, then: UInt8(ascii: "T"))
            put(Int(parts.tm_hour), width: 2, then: UInt8(ascii: ":"))
            put(Int(parts.tm_min), width: 2, then: UInt8(ascii: ":"))
            put(Int(parts.tm_sec), width: 2, then: UInt8(ascii: "."))
            put(millis, width: 3, then: UInt8(ascii: "Z"))
            return count
        }
    }
}
