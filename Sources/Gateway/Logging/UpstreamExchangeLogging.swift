import Foundation
import Logging
import Moya

/// Moya's `NetworkLoggerPlugin` for an upstream, bridged into the gateway's swift-log logger: each entry (request
/// line, request headers, response head) becomes one `debug` line with the upstream's name. Added only when the
/// logging level is `debug` or `trace`, so it costs nothing otherwise.
///
/// Secrets stay out: the headers in `logging.redact_headers`, `Authorization`, `Proxy-Authorization`, `Cookie`,
/// `Set-Cookie`, the API-key header and common token headers are printed as `[REDACTED]`; bodies are never logged;
/// sensitive query parameters (`token`, `api_key`, ...) are redacted in URLs.
enum UpstreamExchangeLogging {
    /// Always redacted, whatever `logging.redact_headers` says.
    static let alwaysRedacted: Set<String> = [
        "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "Api-Key", "X-Auth-Token",
        "X-Access-Token", "X-Api-Token", "X-Refresh-Token", "X-Session-Token", "X-CSRF-Token", "X-XSRF-Token",
        "X-Amz-Security-Token", "X-Goog-Api-Key", "Token"
    ]

    /// The plugin, or `nil` when `logger` does not log at `debug`.
    static func plugin(logger: Logger, upstream: String, redactHeaders: [String], apiKeyHeader: String?)
        -> NetworkLoggerPlugin?
    {
        guard logger.logLevel <= .debug else { return nil }
        var redacted = alwaysRedacted.union(redactHeaders)
        if let apiKeyHeader { redacted.insert(apiKeyHeader) }
        let configuration = NetworkLoggerPlugin.Configuration(
            formatter: NetworkLoggerPlugin.Configuration.Formatter(entry: { identifier, message, _ in
                "\(identifier): \(message)"
            }),
            output: { _, items in
                for item in items {
                    logger.debug(
                        "upstream exchange",
                        metadata: [
                            "upstream": .string(upstream),
                            "entry": .string(HeaderRedactor.redactURLQueries(in: item))
                        ])
                }
            },
            logOptions: [.requestMethod, .requestHeaders],
            redactedHeaders: redacted)
        return NetworkLoggerPlugin(configuration: configuration)
    }
}

extension HeaderRedactor {
    /// `text` with the sensitive query parameters of every URL in it redacted (a URL ends at white space).
    static func redactURLQueries(in text: String) -> String {
        guard text.contains("?") else { return text }
        return text.split(separator: " ", omittingEmptySubsequences: false)
            .map { $0.contains("?") ? redactQuery(in: String($0)) : String($0) }
            .joined(separator: " ")
    }
}
