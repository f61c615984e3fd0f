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

    public typealias CredentialClosure = (TargetType) -> URLCredential?
    let credentialsClosure: CredentialClosure
    let preemptive: Bool

    /// Initializes a CredentialsPlugin.
    public init(preemptive: Bool = false, credentialsClosure: @escaping CredentialClosure) {
        self.credentialsClosure = credentialsClosure
        self.preemptive = preemptive
    }

    // MARK: Plugin

    public func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        guard preemptive, request.value(forHTTPHeaderField: "Authorization") == nil,
              let credential = credentialsClosure(target), let user = credential.user, let password = credential.password else {
            return request
        }
        var request = request
        request.setValue(AuthenticationChallenge.basicAuthorization(user: user, password: password), forHTTPHeaderField: "Authorization")
        return request
    }

    public func willSend(_ request: RequestType, target: TargetType) {
        if let credentials = credentialsClosure(target) {
            _ = request.authenticate(with: credentials)
        }
    }
}
