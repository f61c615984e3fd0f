import Foundation
import Locking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A Moya Plugin receives callbacks to perform side effects wherever a request is sent or received.
///
/// for example, a plugin may be used to
///     - log network requests
///     - hide and show a network activity indicator
///     - inject additional information into a request
public protocol PluginType {
    /// Called to modify a request before sending.
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest

    /// Called immediately before a request is sent over the network (or stubbed).
    func willSend(_ request: RequestType, target: TargetType)

    /// Called after a response has been received, but before the MoyaProvider has invoked its completion handler.
    func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType)

    /// Called to modify a result before completion.
    func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<Moya.Response, MoyaError>
}

public extension PluginType {
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest { request }
    func willSend(_ request: RequestType, target: TargetType) { }
    func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) { }
    func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<Moya.Response, MoyaError> { result }
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
    func authenticate(username: String, password: String, persistence: URLCredential.Persistence) -> Self

    /// Authenticates the request with an `URLCredential` instance.
    ///
    /// The credential answers a `401` challenge for `Basic` or `Digest` authentication: the provider re-sends the
    /// request once with the matching `Authorization` header.
    func authenticate(with credential: URLCredential) -> Self

    /// cURL representation of the instance.
    ///
    /// - Returns: The cURL equivalent of the instance.
    func cURLDescription(calling handler: @escaping (String) -> Void) -> Self
}

/// The `RequestType` handed to plugins: the prepared request, the session headers, and the credential a plugin
/// supplied for an authentication challenge.
///
/// It is also where a response finds its `request`: one the request closure built, or one made on first use from the
/// `TransportRequest` that was sent (most callers never ask, and building it costs URL parsing and header work). One
/// object serves both, so a request costs one allocation for them.
public final class RequestTypeWrapper: RequestType, @unchecked Sendable {
    private enum State {
        case made(URLRequest?)
        case pending(TransportRequest)
    }

    /// An inline lock: the request is read from any thread (plugins, response consumers).
    private let state: Locked<UncheckedSendable<State>>
    private let storedCredential = Locked<UncheckedSendable<URLCredential?>>(UncheckedSendable(nil))
    public let sessionHeaders: [String: String]

    public var request: URLRequest? {
        let current = state.withLock { state in
            if case .pending(let transport) = state.value { state = UncheckedSendable(.made(URLRequest(transport: transport))) }
            return state
        }
        guard case .made(let request) = current.value else { return nil }
        return request
    }

    /// The credential set with `authenticate`, if any.
    public var credential: URLCredential? { storedCredential.withLock { $0 }.value }

    init(request: URLRequest?, sessionHeaders: [String: String] = [:]) {
        state = Locked(UncheckedSendable(.made(request)))
        self.sessionHeaders = sessionHeaders
    }

    /// A wrapper whose `request` is made from `transport` on first use.
    init(transport: consuming TransportRequest, sessionHeaders: [String: String] = [:]) {
        state = Locked(UncheckedSendable(.pending(transport)))
        self.sessionHeaders = sessionHeaders
    }

    @discardableResult
    public func authenticate(username: String, password: String, persistence: URLCredential.Persistence = .forSession) -> Self {
        authenticate(with: URLCredential(user: username, password: password, persistence: persistence))
    }

    @discardableResult
    public func authenticate(with credential: URLCredential) -> Self {
        storedCredential.withLock { $0 = UncheckedSendable(credential) }
        return self
    }

    @discardableResult
    public func cURLDescription(calling handler: @escaping (String) -> Void) -> Self {
        handler(cURLDescription())
        return self
    }

    /// The cURL command for the request (Alamofire's format).
    public func cURLDescription() -> String {
        CURLFormatter.describe(request: request, sessionHeaders: sessionHeaders, credential: credential, redactedHeaders: [])
    }
}

/// Builds Alamofire-style cURL commands.
enum CURLFormatter {
    static let redacted = "[REDACTED]"

    static func describe(request: URLRequest?, sessionHeaders: [String: String], credential: URLCredential?,
                         redactedHeaders: Set<String>) -> String {
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
