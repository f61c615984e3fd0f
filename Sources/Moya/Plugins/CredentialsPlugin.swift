import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Provides each request with optional URLCredentials.
///
/// By default (as in Moya) the credential answers the server's challenge: when a response is `401` with
/// `WWW-Authenticate: Basic` or `Digest`, the provider sends the request once more with the matching
/// `Authorization` header. With `preemptive: true` a `Basic` header is added to every request up front instead,
/// saving the extra round trip (Basic only; the header is not added when the request already has one).
public final class CredentialsPlugin: PluginType {

    /// A closure returning the credential for a target, or nil for none.
    public typealias CredentialClosure = (TargetType) -> URLCredential?
    let credentialsClosure: CredentialClosure
    let preemptive: Bool

    /// Initializes a CredentialsPlugin.
    ///
    /// - Parameters:
    ///   - preemptive: Whether every request gets a `Basic` `Authorization` header up front, instead of answering a
    ///     `401` challenge.
    ///   - credentialsClosure: Returns the credential for a target.
    public init(preemptive: Bool = false, credentialsClosure: @escaping CredentialClosure) {
        self.credentialsClosure = credentialsClosure
        self.preemptive = preemptive
    }

    // MARK: Plugin

    /// Adds the `Basic` header when the plugin is pre-emptive and the request has no `Authorization` header.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - target: The request's target.
    /// - Returns: The request, with the header when one was added.
    public func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        guard preemptive, request.value(forHTTPHeaderField: "Authorization") == nil,
            let credential = credentialsClosure(target), let user = credential.user, let password = credential.password
        else {
            return request
        }
        var request = request
        request.setValue(
            AuthenticationChallenge.basicAuthorization(user: user, password: password),
            forHTTPHeaderField: "Authorization")
        return request
    }

    /// Hands the credential to the request, which answers a `401` Basic or Digest challenge with it.
    ///
    /// - Parameters:
    ///   - request: The request about to be sent.
    ///   - target: The request's target.
    public func willSend(_ request: RequestType, target: TargetType) {
        if let credentials = credentialsClosure(target) {
            _ = request.authenticate(with: credentials)
        }
    }
}
