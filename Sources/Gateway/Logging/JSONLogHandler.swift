import Foundation
import Logging

/// A swift-log handler writing one JSON object per line (`ts`, `level`, `msg`, metadata) to a ``LogSink``, or plain
/// text when the configuration says `format: text`. Values of metadata keys named like secrets are redacted. The
/// level, format and redacted names come from shared ``LogSettings``, so a reload changes them for every logger.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    /// The settings' level, unless this logger was given its own.
    package var logLevel: Logger.Level {
        get { levelOverride ?? settings.level }
        set { levelOverride = newValue }
    }
    private var levelOverride: Logger.Level?
    private let sink: LogSink
    private let settings: LogSettings

    package init(sink: LogSink, settings: LogSettings) {
        self.sink = sink
        self.settings = settings
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let timestamp = JSONLogHandler.timestamp()
        let redactor = settings.redactor
        if settings.json {
            var line =
                "{\"ts\":\"\(timestamp)\",\"level\":\"\(event.level.rawValue)\",\"msg\":\(JSONLogHandler.quote(event.message.description))"
            for key in fields.keys.sorted() {
                line +=
                    ",\(JSONLogHandler.quote(key)):\(JSONLogHandler.encode(fields[key]!, key: key, redactor: redactor))"
            }
            sink.write(line + "}")
        } else {
            let rendered = fields.keys.sorted().map {
                "\($0)=\(redactor.shouldRedact(name: $0) ? HeaderRedactor.placeholder : "\(fields[$0]!)")"
            }
            sink.write("\(timestamp) \(event.level.rawValue) \(event.message) \(rendered.joined(separator: " "))")
        }
    }

    /// Writes an access-log line: its fields at the top level, in a fixed order, without the logger's metadata, at
    /// any level. ``Telemetry`` calls it directly rather than through a `Logger`, whose metadata dictionary, boxed
    /// value and cast back cost about 0.5 µs of CPU per request.
    func write(_ access: AccessLogLine) {
        if settings.json {
            access.jsonBytes().withUnsafeBufferPointer { sink.write(bytes: $0) }
        } else {
            sink.write(access.text())
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
            return "{"
                + dictionary.keys.sorted().map {
                    "\(quote($0)):\(encode(dictionary[$0]!, key: $0, redactor: redactor))"
                }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal.
    static func quote(_ text: String) -> String { "\"" + ErrorBody.escape(text) + "\"" }

    /// Now in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (years clamped to 0…9999).
    static func timestamp() -> String {
        var text = LogLineBuffer(capacity: 24)
        text.appendTimestamp()
        return String(decoding: text.bytes, as: UTF8.self)
    }
}
