import Logging

/// `logging`: the level, format and output of the log and the access log, and the headers never shown in them.
package struct LoggingConfig: Sendable, Equatable {
    package enum Format: String, Sendable, Equatable { case json, text }

    package enum Output: Sendable, Equatable {
        case stdout
        case stderr
        /// A file path, resolved against the config file's directory.
        case file(String)
    }

    /// The default `redact_headers` list.
    package static let defaultRedactHeaders = [
        "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"
    ]

    /// Default `.info`.
    package var level: Logger.Level = .info
    /// Default `.json`.
    package var format: Format = .json
    /// Default true.
    package var accessLog: Bool = true
    /// Default `.stdout`.
    package var output: Output = .stdout
    /// Header names whose values are replaced by `[REDACTED]` in every log line.
    package var redactHeaders: [String] = LoggingConfig.defaultRedactHeaders

    package init() {}
}
