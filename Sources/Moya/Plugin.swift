import Foundation
import HTTPClientCore
import Locking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A Moya Plugin receives callbacks to perform side effects wherever a request is sent or received.
///
/// for example, a plugin may be used to
/// - log network requests
/// - hide and show a network activity indicator
/// - inject additional information into a request
///
/// Every hook has a default that does nothing, so a plugin implements only the ones it needs. A provider calls them
/// in the order of its `plugins` array: `prepare` (each plugin's output is the next one's input), `willSend`, then
/// the network or the stub, `didReceive`, and `process` (chained too) before the completion.
public protocol PluginType {
    /// Called to modify a request before sending.
    ///
    /// - Parameters:
    ///   - request: The request as the request closure (and the plugins before this one) made it.
    ///   - target: The request's target.
    /// - Returns: The request to send.
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest

    /// Called immediately before a request is sent over the network (or stubbed).
    ///
    /// - Parameters:
    ///   - request: The prepared request, and the session's headers.
    ///   - target: The request's target.
    func willSend(_ request: RequestType, target: TargetType)

    /// Called after a response has been received, but before the MoyaProvider has invoked its completion handler.
    ///
    /// - Parameters:
    ///   - result: The response, or the error (validation failures and cancellations included).
    ///   - target: The request's target.
    func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType)

    /// Called to modify a result before completion.
    ///
    /// - Parameters:
    ///   - result: The result as the plugins before this one left it.
    ///   - target: The request's target.
    /// - Returns: The result to pass on.
    func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<Moya.Response, MoyaError>
}

extension PluginType {
    /// Returns the request unchanged.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - target: The request's target.
    /// - Returns: `request`.
    public func prepare(_ request: URLRequest, target: TargetType) -> URLRequest { request }

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - request: The prepared request.
    ///   - target: The request's target.
    public func willSend(_ request: RequestType, target: TargetType) {}

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - result: The result.
    ///   - target: The request's target.
    public func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) {}

    /// Returns the result unchanged.
    ///
    /// - Parameters:
    ///   - result: The result.
    ///   - target: The request's target.
    /// - Returns: `result`.
    public func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<
        Moya.Response, MoyaError
    > { result }
}

/// Request type used by `willSend` plugin function.
public protocol RequestType {

    // Note:
    //
    // We use this protocol instead of the Alamofire request to avoid leaking that abstraction.
    // A plugin should not know about Alamofire at all.

    /// Retrieve an `NSURLRequest` representation (the request after the plugins' `prepare`).
    var request: URLRequest? { get }

    /// Additional headers appended to the request when added to the session.
    var sessionHeaders: [String: String] { get }

    /// Authenticates the request with a username and password.
    ///
    /// - Parameters:
    ///   - username: The user name.
    ///   - password: The password.
    ///   - persistence: Kept for compatibility; the credential lives as long as the request.
    /// - Returns: The request.
    func authenticate(username: String, password: String, persistence: URLCredential.Persistence) -> Self

    /// Authenticates the request with an `URLCredential` instance.
    ///
    /// The credential answers a `401` challenge for `Basic` or `Digest` authentication: the provider re-sends the
    /// request once with the matching `Authorization` header.
    ///
    /// - Parameter credential: The user name and password.
    /// - Returns: The request.
    func authenticate(with credential: URLCredential) -> Self

    /// cURL representation of the instance.
    ///
    /// - Parameter handler: Called with the cURL command.
    /// - Returns: The request.
    func cURLDescription(calling handler: @escaping (String) -> Void) -> Self
}

/// A `URLRequest` a ``RequestTypeWrapper`` made (or was given), boxed: made at most once per wrapper.
private final class MadeRequest: @unchecked Sendable {
    let request: URLRequest?

    init(_ request: URLRequest?) {
        self.request = request
    }
}

/// What a ``RequestTypeWrapper`` keeps behind its lock.
private struct WrapperState: @unchecked Sendable {
    var made: MadeRequest?
    var credential: URLCredential?
}

/// The `RequestType` handed to plugins: the prepared request, the session headers, and the credential a plugin
/// supplied for an authentication challenge.
///
/// It is also where a response finds its `request`: one the request closure built, or one made on first use from the
/// `TransportRequest` that was sent (most callers never ask, and building it costs URL parsing and header work). One
/// object serves both, so a request costs one allocation for them.
final class RequestTypeWrapper: RequestType, @unchecked Sendable {
    /// The transport request the wrapper was made from; ``noTransport`` for one made from a `URLRequest`. It never
    /// changes, so it is read without the lock: a `TransportOutgoing` sends it from here, without a copy of its own.
    /// Not optional: `TransportRequest` is address-only (its deadline is a resilient `ContinuousClock.Instant`), and
    /// unwrapping an optional one copies it.
    let transport: TransportRequest
    /// Whether ``transport`` is the request (false: the wrapper was made from a `URLRequest`).
    private let hasTransport: Bool
    /// The `URLRequest`, once made (at once for a wrapper made from one), and the credential set with `authenticate`.
    /// One inline lock: the request is read from any thread (plugins, response consumers). Both are references, so a
    /// wrapper whose request was never made (a stub's, a relayed one's) is destroyed with two releases of nil rather
    /// than an outlined destroy of an optional `URLRequest`.
    private let state: Locked<WrapperState>
    let sessionHeaders: [String: String]

    var request: URLRequest? {
        state.withLock { state -> MadeRequest in
            if let made = state.made { return made }
            let built = MadeRequest(hasTransport ? URLRequest(transport: transport) : nil)
            state.made = built
            return built
        }.request
    }

    /// The credential set with `authenticate`, if any.
    var credential: URLCredential? { state.withLock { $0.credential } }

    init(request: URLRequest?, sessionHeaders: [String: String] = [:]) {
        transport = Self.noTransport
        hasTransport = false
        state = Locked(WrapperState(made: MadeRequest(request)))
        self.sessionHeaders = sessionHeaders
    }

    /// A wrapper whose `request` is made from `transport` on first use.
    init(transport: consuming TransportRequest, sessionHeaders: [String: String] = [:]) {
        self.transport = transport
        hasTransport = true
        state = Locked(WrapperState())
        self.sessionHeaders = sessionHeaders
    }

    /// A wrapper for `transport` whose `request` is `request` (a retrier's request, as it was given).
    init(transport: consuming TransportRequest, request: URLRequest) {
        self.transport = transport
        hasTransport = true
        state = Locked(WrapperState(made: MadeRequest(request)))
        sessionHeaders = [:]
    }

    /// The `transport` of a wrapper made from a `URLRequest`: never sent.
    private static let noTransport = TransportRequest(
        http: HTTPClientRequest(origin: HTTPOrigin(scheme: "http", host: "invalid", port: 80), target: "/"),
        timeout: nil)

    @discardableResult
    func authenticate(username: String, password: String, persistence: URLCredential.Persistence = .forSession) -> Self
    {
        authenticate(with: URLCredential(user: username, password: password, persistence: persistence))
    }

    @discardableResult
    func authenticate(with credential: URLCredential) -> Self {
        state.withLock { $0.credential = credential }
        return self
    }

    @discardableResult
    func cURLDescription(calling handler: @escaping (String) -> Void) -> Self {
        handler(cURLDescription())
        return self
    }

    /// The cURL command for the request (Alamofire's format).
    func cURLDescription() -> String {
        CURLFormatter.describe(
            request: request, sessionHeaders: sessionHeaders, credential: credential, redactedHeaders: [])
    }
}

/// Builds Alamofire-style cURL commands.
enum CURLFormatter {
    static let redacted = "[REDACTED]"

    static func describe(
        request: URLRequest?, sessionHeaders: [String: String], credential: URLCredential?,
        redactedHeaders: Set<String>
    ) -> String {
        guard let request, let url = request.url, let method = request.httpMethod else {
            return "$ curl command could not be created"
        }
        var components = ["$ curl -v"]
        components.append("-X \(method)")

        if let credential, let user = credential.user, let password = credential.password {
            if redactedHeaders.contains("authorization") {
                components.append("-u \(redacted)")
            } else {
                components.append("-u \(user):\(password)")
            }
        }

        var names: [String] = []
        var values: [String: (name: String, value: String)] = [:]
        func add(_ name: String, _ value: String) {
            let key = name.lowercased()
            guard key != "cookie" else { return }
            if values[key] == nil { names.append(key) }
            values[key] = (name, value)
        }
        for (name, value) in sessionHeaders.sorted(by: { $0.key < $1.key }) { add(name, value) }
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) { add(name, value) }
        for key in names {
            guard let header = values[key] else { continue }
            let value = redactedHeaders.contains(key) ? redacted : header.value
            let escapedValue = value.replacingOccurrences(of: "\"", with: "\\\"")
            components.append("-H \"\(header.name): \(escapedValue)\"")
        }

        if let httpBodyData = request.httpBody, let httpBody = String(data: httpBodyData, encoding: .utf8) {
            var escapedBody = httpBody.replacingOccurrences(of: "\\\"", with: "\\\\\"")
            escapedBody = escapedBody.replacingOccurrences(of: "\"", with: "\\\"")
            components.append("-d \"\(escapedBody)\"")
        }

        components.append("\"\(url.absoluteString)\"")
        return components.joined(separator: " \\\n\t")
    }
}
