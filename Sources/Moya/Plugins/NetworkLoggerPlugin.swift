import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Logs network activity (outgoing requests and incoming responses).
///
/// Beyond Moya: `Configuration.redactedHeaders` lists header names (case-insensitive) whose values are printed as
/// `[REDACTED]` in the headers entry, the response entry and the cURL command (where `-u user:password` is redacted
/// too when `Authorization` is listed). It is empty by default; `Configuration.sensitiveHeaders` is a ready list.
public final class NetworkLoggerPlugin {

    /// What is logged, how it is formatted and where it goes.
    public var configuration: Configuration

    /// Initializes a NetworkLoggerPlugin.
    ///
    /// - Parameter configuration: What to log and where; by default the `.default` options, printed.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// A logger with the `.default` options.
    public class var `default`: NetworkLoggerPlugin {
        NetworkLoggerPlugin(configuration: Configuration(logOptions: .default))
    }

    /// A logger with the `.verbose` options.
    public class var verbose: NetworkLoggerPlugin {
        NetworkLoggerPlugin(configuration: Configuration(logOptions: .verbose))
    }
}

// MARK: - PluginType
extension NetworkLoggerPlugin: PluginType {
    /// Logs the request: the cURL command with `.formatRequestAscURL`, otherwise the URL and what the options ask for.
    ///
    /// - Parameters:
    ///   - request: The request about to be sent.
    ///   - target: The request's target.
    public func willSend(_ request: RequestType, target: TargetType) {
        logNetworkRequest(request, target: target) { [weak self] output in
            self?.configuration.output(target, output)
        }
    }

    /// Logs the response (its body when the options ask for it), or the error.
    ///
    /// - Parameters:
    ///   - result: The request's result.
    ///   - target: The request's target.
    public func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) {
        switch result {
        case .success(let response):
            configuration.output(target, logNetworkResponse(response, target: target, isFromError: false))
        case .failure(let error):
            configuration.output(target, logNetworkError(error, target: target))
        }
    }
}

// MARK: - Logging
extension NetworkLoggerPlugin {

    func logNetworkRequest(_ request: RequestType, target: TargetType, completion: @escaping ([String]) -> Void) {
        // cURL formatting
        if configuration.logOptions.contains(.formatRequestAscURL) {
            if let wrapper = request as? RequestTypeWrapper {
                let curl = CURLFormatter.describe(
                    request: wrapper.request, sessionHeaders: wrapper.sessionHeaders,
                    credential: wrapper.credential, redactedHeaders: redactedKeys)
                completion([configuration.formatter.entry("Request", curl, target)])
            } else {
                _ = request.cURLDescription { [weak self] output in
                    guard let self else { return }
                    completion([self.configuration.formatter.entry("Request", output, target)])
                }
            }
            return
        }

        // Request presence check
        guard let httpRequest = request.request else {
            completion([configuration.formatter.entry("Request", "(invalid request)", target)])
            return
        }

        // Adding log entries for each given log option
        var output = [String]()

        output.append(configuration.formatter.entry("Request", httpRequest.description, target))

        if configuration.logOptions.contains(.requestHeaders) {
            var allHeaders = request.sessionHeaders
            for (name, value) in httpRequest.allHTTPHeaderFields ?? [:] {
                for existing in allHeaders.keys where existing.caseInsensitiveCompare(name) == .orderedSame {
                    allHeaders.removeValue(forKey: existing)
                }
                allHeaders[name] = value
            }
            output.append(configuration.formatter.entry("Request Headers", redact(allHeaders).description, target))
        }

        if configuration.logOptions.contains(.requestBody) {
            if let bodyStream = httpRequest.httpBodyStream {
                output.append(configuration.formatter.entry("Request Body Stream", bodyStream.description, target))
            }

            if let body = httpRequest.httpBody {
                let stringOutput = configuration.formatter.requestData(body)
                output.append(configuration.formatter.entry("Request Body", stringOutput, target))
            }
        }

        if configuration.logOptions.contains(.requestMethod),
            let httpMethod = httpRequest.httpMethod
        {
            output.append(configuration.formatter.entry("HTTP Request Method", httpMethod, target))
        }

        completion(output)
    }

    func logNetworkResponse(_ response: Response, target: TargetType, isFromError: Bool) -> [String] {
        // Adding log entries for each given log option
        var output = [String]()

        // Response presence check
        if let httpResponse = response.response {
            output.append(configuration.formatter.entry("Response", describe(httpResponse), target))
        } else {
            output.append(
                configuration.formatter.entry("Response", "Received empty network response for \(target).", target))
        }

        if (isFromError && configuration.logOptions.contains(.errorResponseBody))
            || configuration.logOptions.contains(.successResponseBody)
        {

            let stringOutput = configuration.formatter.responseData(response.data)
            output.append(configuration.formatter.entry("Response Body", stringOutput, target))
        }

        return output
    }

    func logNetworkError(_ error: MoyaError, target: TargetType) -> [String] {
        // Some errors will still have a response, like errors due to status code validation.
        if let moyaResponse = error.response {
            return logNetworkResponse(moyaResponse, target: target, isFromError: true)
        }

        // Errors without an HTTPURLResponse are those due to connectivity, time-out and such.
        return [configuration.formatter.entry("Error", "Error calling \(target) : \(error)", target)]
    }

    private var redactedKeys: Set<String> { Set(configuration.redactedHeaders.map { $0.lowercased() }) }

    private func redact(_ headers: [String: String]) -> [String: String] {
        let keys = redactedKeys
        guard !keys.isEmpty else { return headers }
        var result = headers
        for name in headers.keys where keys.contains(name.lowercased()) { result[name] = CURLFormatter.redacted }
        return result
    }

    /// The Darwin form of `HTTPURLResponse.description` (Linux prints `{ status: 200, headers`), with headers sorted
    /// and redacted: `<NSHTTPURLResponse: 0x…> { URL: u } { Status Code: 200, Headers {\n    "Name" = value;\n} }`.
    func describe(_ response: HTTPURLResponse) -> String {
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields { headers["\(key)"] = "\(value)" }
        let lines = redact(headers).sorted { $0.key < $1.key }.map { "    \"\($0.key)\" = \($0.value);" }
        let address = String(UInt(bitPattern: ObjectIdentifier(response).hashValue), radix: 16)
        let url = response.url?.absoluteString ?? "(null)"
        let headerBlock = lines.isEmpty ? "Headers {\n}" : "Headers {\n" + lines.joined(separator: "\n") + "\n}"
        return
            "<NSHTTPURLResponse: 0x\(address)> { URL: \(url) } { Status Code: \(response.statusCode), \(headerBlock) }"
    }
}

// MARK: - Configuration

extension NetworkLoggerPlugin {
    /// What a ``NetworkLoggerPlugin`` logs, how it formats entries, and where they go.
    public struct Configuration {

        // MARK: - Typealiases
        /// A closure receiving the entries of one event (a request, a response or an error) in one call.
        public typealias OutputType = (_ target: TargetType, _ items: [String]) -> Void

        // MARK: - Properties

        /// How entries and bodies are turned into text.
        public var formatter: Formatter
        /// Where entries go.
        public var output: OutputType
        /// Which parts of requests and responses are logged.
        public var logOptions: LogOptions
        /// Header names (case-insensitive) whose values are logged as `[REDACTED]`. Empty by default.
        public var redactedHeaders: Set<String>

        /// Headers that usually carry secrets: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`,
        /// `X-Api-Key`.
        public static let sensitiveHeaders: Set<String> = [
            "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"
        ]

        /// The designated way to instantiate a Configuration.
        ///
        /// - Parameters:
        ///   - formatter: An object holding all formatter closures available for customization.
        ///   - output: A closure responsible for writing the given log entries into your log system.
        ///                    The default value writes entries to the debug console.
        ///   - logOptions: A set of options you can use to customize which request component is logged.
        ///   - redactedHeaders: Header names whose values are replaced by `[REDACTED]`.
        public init(
            formatter: Formatter = Formatter(),
            output: @escaping OutputType = defaultOutput,
            logOptions: LogOptions = .default,
            redactedHeaders: Set<String> = []
        ) {
            self.formatter = formatter
            self.output = output
            self.logOptions = logOptions
            self.redactedHeaders = redactedHeaders
        }

        // MARK: - Defaults

        /// Prints each entry on its own line.
        ///
        /// - Parameters:
        ///   - target: The request's target.
        ///   - items: The entries.
        public static func defaultOutput(target: TargetType, items: [String]) {
            for item in items {
                print(item, separator: ",", terminator: "\n")
            }
        }
    }
}

extension NetworkLoggerPlugin.Configuration {
    /// The parts of requests and responses a ``NetworkLoggerPlugin`` logs.
    public struct LogOptions: OptionSet, Sendable {
        /// The options' bits.
        public let rawValue: Int

        /// Creates options from their bits.
        ///
        /// - Parameter rawValue: The bits of the options.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The request's method will be logged.
        public static let requestMethod: LogOptions = LogOptions(rawValue: 1 << 0)
        /// The request's body will be logged.
        public static let requestBody: LogOptions = LogOptions(rawValue: 1 << 1)
        /// The request's headers will be logged.
        public static let requestHeaders: LogOptions = LogOptions(rawValue: 1 << 2)
        /// The request will be logged in the cURL format.
        ///
        /// If this option is used, the following components will be logged regardless of their respective options being set:
        /// - request's method
        /// - request's headers
        /// - request's body.
        ///
        /// The other request options are then ignored.
        public static let formatRequestAscURL: LogOptions = LogOptions(rawValue: 1 << 3)
        /// The body of a response that is a success will be logged (as in Moya, the body of an error's response too).
        public static let successResponseBody: LogOptions = LogOptions(rawValue: 1 << 4)
        /// The body of a response that is an error will be logged.
        public static let errorResponseBody: LogOptions = LogOptions(rawValue: 1 << 5)

        // Aggregate options
        /// Only basic components will be logged.
        public static let `default`: LogOptions = [requestMethod, requestHeaders]
        /// All components will be logged.
        public static let verbose: LogOptions = [
            requestMethod, requestHeaders, requestBody,
            successResponseBody, errorResponseBody
        ]
    }
}

extension NetworkLoggerPlugin.Configuration {
    /// The closures that turn log entries and bodies into text.
    public struct Formatter {

        // MARK: Typealiases
        /// A closure turning a request or response body into text.
        public typealias DataFormatterType = (Data) -> (String)
        /// A closure making one log entry of an identifier (`"Request"`, `"Response Body"`, ...) and a message.
        public typealias EntryFormatterType = (_ identifier: String, _ message: String, _ target: TargetType) -> String

        // MARK: Properties

        /// Makes each log entry.
        public var entry: EntryFormatterType
        /// Turns a request body into text.
        public var requestData: DataFormatterType
        /// Turns a response body into text.
        public var responseData: DataFormatterType

        /// The designated way to instantiate a Formatter.
        ///
        /// - Parameters:
        ///   - entry: The closure formatting a message into a new log entry.
        ///   - requestData: The closure converting HTTP request's body into a String.
        ///     The default value assumes the body's data is an utf8 String.
        ///   - responseData: The closure converting HTTP response's body into a String.
        ///     The default value assumes the body's data is an utf8 String.
        public init(
            entry: @escaping EntryFormatterType = defaultEntryFormatter,
            requestData: @escaping DataFormatterType = defaultDataFormatter,
            responseData: @escaping DataFormatterType = defaultDataFormatter
        ) {
            self.entry = entry
            self.requestData = requestData
            self.responseData = responseData
        }

        // MARK: Defaults

        /// The body decoded as UTF-8, or `## Cannot map data to String ##`.
        ///
        /// - Parameter data: The body.
        /// - Returns: Its text.
        public static func defaultDataFormatter(_ data: Data) -> String {
            String(data: data, encoding: .utf8) ?? "## Cannot map data to String ##"
        }

        /// `Moya_Logger: [<date and time>] <identifier>: <message>`.
        ///
        /// - Parameters:
        ///   - identifier: What the entry is about (`"Request"`, `"Response"`, ...).
        ///   - message: The entry's text.
        ///   - target: The request's target.
        /// - Returns: The entry.
        public static func defaultEntryFormatter(identifier: String, message: String, target: TargetType) -> String {
            let date = defaultEntryDateFormatter.string(from: Date())
            return "Moya_Logger: [\(date)] \(identifier): \(message)"
        }

        /// A date formatter with short date and time styles (a new one each time: DateFormatter is not Sendable).
        static var defaultEntryDateFormatter: DateFormatter {
            let formatter = DateFormatter()
            formatter.timeStyle = .short
            formatter.dateStyle = .short
            return formatter
        }
    }
}
