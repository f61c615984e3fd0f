import Foundation
import Logging

/// A swift-log handler writing one JSON object per line (`ts`, `level`, `msg`, metadata) to a ``LogSink``, or plain
/// text when the configuration says `format: text`. Values of metadata keys named like secrets are redacted.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let sink: LogSink
    private let json: Bool
    private let redactor: HeaderRedactor

    public init(sink: LogSink, level: Logger.Level, json: Bool = true, redactor: HeaderRedactor = HeaderRedactor()) {
        self.sink = sink
        self.logLevel = level
        self.json = json
        self.redactor = redactor
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let timestamp = JSONLogHandler.timestamp()
        if json {
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

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int(now.tv_nsec / 1_000_000)
        func pad(_ value: Int32, _ width: Int = 2) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)).\(pad(Int32(millis), 3))Z"
    }
}
