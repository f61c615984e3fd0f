import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends a token from an ``AccessTokenSource`` as `Authorization: <type> <token>` on every attempt of a request, and
/// when one comes back `401` tells the source the token was refused and sends the request once more with a new one.
///
/// - It is a ``RequestAdapter``: before each attempt it asks the source for a token, waiting when there is none yet
///   (a first token, or a new one being obtained after the last expired) but no longer than the request's
///   `timeoutInterval` (its deadline on the transport lane); when the source has no token to give, the request fails
///   with the source's ``AccessTokenSourceError`` (`.underlying(error, nil)`) and nothing is sent.
/// - It is a ``RequestRetrier``: a `401` to an attempt among the first `refreshAttempts` that carried a token
///   invalidates that token (``AccessTokenSource/invalidate(_:)``: concurrent `401`s with the same token cause one
///   renewal) and re-sends the request, which the adapter gives the new token. The default (1) retries only the first
///   send, so an upstream that keeps refusing is not looped on. A request whose body cannot be sent again (a stream
///   already pulled from) is not re-sent, as with every retrier.
///
/// Targets that are `AccessTokenAuthorizable` with a nil `authorizationType` are left alone; those with a type use it;
/// other targets use the plugin's `authorizationType`. Stubbed requests are not adapted. The token is set after
/// `willSend`, so plugins that log requests there never see it.
public final class AccessTokenSourcePlugin: RequestAdapter, RequestRetrier, Sendable {
    /// Where the tokens come from.
    public let source: any AccessTokenSource
    /// The scheme used for targets that do not say.
    public let authorizationType: AuthorizationType
    /// How many of a request's attempts may trigger a renewal on `401`.
    public let refreshAttempts: Int

    /// Creates a plugin that sends the tokens of `source`.
    /// - Parameters:
    ///   - source: where the tokens come from, shared by every request of the provider (and by other providers given
    ///     the same source).
    ///   - authorizationType: the scheme for targets that are not ``AccessTokenAuthorizable``; `.bearer` by default.
    ///   - refreshAttempts: how many of a request's attempts may invalidate their token on `401` and send the request
    ///     again; 1 by default (only the first send), 0 never.
    public init(source: any AccessTokenSource, authorizationType: AuthorizationType = .bearer, refreshAttempts: Int = 1)
    {
        self.source = source
        self.authorizationType = authorizationType
        self.refreshAttempts = refreshAttempts
    }

    private func scheme(for target: TargetType) -> AuthorizationType? {
        let realTarget = (target as? MultiTarget)?.target ?? target
        if let authorizable = realTarget as? AccessTokenAuthorizable { return authorizable.authorizationType }
        return authorizationType
    }

    /// Sets `Authorization: <scheme> <token>` (replacing any the request had) with a token from ``source``, waiting
    /// for one no longer than the request's `timeoutInterval`. A target whose ``AccessTokenAuthorizable/authorizationType``
    /// is `nil` is left as it is.
    /// - Parameters:
    ///   - request: the request of this attempt.
    ///   - target: the target; a ``MultiTarget`` is looked through to the target it wraps.
    /// - Returns: `request` with the `Authorization` header set.
    /// - Throws: the source's ``AccessTokenSourceError`` when it has no token to give before the request's deadline,
    ///   `CancellationError` when the request is cancelled while it waits. Nothing is sent then.
    public func adapt(_ request: URLRequest, for target: TargetType) async throws -> URLRequest {
        guard let scheme = scheme(for: target) else { return request }
        let deadline = TransportErrors.timeout(of: request).map { ContinuousClock.now + $0 }
        let token = try await source.token(before: deadline)
        var request = request
        request.setValue("\(scheme.value) \(token)", forHTTPHeaderField: "Authorization")
        return request
    }

    public func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        decision(
            sent: request.value(forHTTPHeaderField: "Authorization"), target: target, result: result, attempt: attempt)
    }

    /// Invalidates the token a refused attempt carried and asks for the request to be sent again.
    private func decision(
        sent authorization: String?, target: TargetType, result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) -> RetryDecision {
        guard attempt < refreshAttempts, result.httpResponse?.statusCode == 401, let scheme = scheme(for: target),
            let authorization, authorization.hasPrefix(scheme.value + " ")
        else { return .doNotRetry }
        source.invalidate(String(authorization.dropFirst(scheme.value.count + 1)))
        return .retry(after: 0)
    }
}

extension AccessTokenSourcePlugin: TransportPlugin, TransportAdapter, TransportRetrier {
    package func prepare(_ request: inout TransportRequest, target: TargetType) {}

    package func adapt(_ request: inout TransportRequest, for target: TargetType) async throws {
        guard let scheme = scheme(for: target) else { return }
        var deadline = request.deadline
        if let timeout = request.timeout {
            let bound = ContinuousClock.now + timeout
            deadline = min(deadline ?? bound, bound)
        }
        let token = try await source.token(before: deadline)
        request.http.headers.replaceOrAdd(name: "Authorization", value: scheme.value + " " + token)
    }

    package func retry(
        _ request: TransportRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        decision(
            sent: request.http.headers.first(name: "Authorization"), target: target, result: result, attempt: attempt)
    }
}
