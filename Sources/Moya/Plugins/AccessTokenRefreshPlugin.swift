import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Adds `Authorization: <type> <token>` to requests and, when one comes back `401`, refreshes the token and sends
/// the request once more. Concurrent `401`s share one refresh: every waiting request gets the new token from the
/// same call of `refresh`. When `refresh` throws, every request waiting for it fails with that error
/// (`.underlying(error, the401Response)`).
///
/// Targets that are `AccessTokenAuthorizable` with a nil `authorizationType` are left alone; those with a type use
/// it; other targets use the plugin's `authorizationType`.
public final class AccessTokenRefreshPlugin: RequestRetrier, @unchecked Sendable {
    /// Fetches a new token.
    public typealias RefreshClosure = @Sendable () async throws -> String

    /// The scheme used for targets that do not say.
    public let authorizationType: AuthorizationType
    /// How many of a request's attempts may trigger a refresh.
    public let refreshAttempts: Int
    private let store: TokenStore

    /// Creates the plugin.
    ///
    /// - Parameters:
    ///   - authorizationType: the scheme for targets that are not `AccessTokenAuthorizable`.
    ///   - token: the token to start with (nil: the first request goes without one and triggers a refresh on 401).
    ///   - refresh: fetches a new token; called once for any number of simultaneous 401s.
    ///   - refreshAttempts: a `401` on attempts `0..<refreshAttempts` of a request triggers a refresh and a retry;
    ///     the default (1) refreshes only for the first send, so a server that keeps answering 401 is not looped on.
    public init(
        authorizationType: AuthorizationType = .bearer, token: String?, refreshAttempts: Int = 1,
        refresh: @escaping RefreshClosure
    ) {
        self.authorizationType = authorizationType
        self.refreshAttempts = refreshAttempts
        self.store = TokenStore(token: token, refresh: refresh)
    }

    /// The current token.
    public var token: String? { get async { await store.current } }

    /// How many times `refresh` has been called.
    public var refreshCount: Int { get async { await store.refreshCount } }

    private func scheme(for target: TargetType) -> AuthorizationType? {
        let realTarget = (target as? MultiTarget)?.target ?? target
        if let authorizable = realTarget as? AccessTokenAuthorizable { return authorizable.authorizationType }
        return authorizationType
    }

    /// Sets `Authorization` to the current token, when there is one and the target takes one.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - target: The request's target.
    /// - Returns: The request with the header.
    public func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        guard let scheme = scheme(for: target), let token = store.snapshot else { return request }
        var request = request
        request.setValue("\(scheme.value) \(token)", forHTTPHeaderField: "Authorization")
        return request
    }

    /// After a `401`, refreshes the token (or waits for the refresh in progress) and sends the request again with it.
    ///
    /// - Parameters:
    ///   - request: The request just sent.
    ///   - target: The request's target.
    ///   - result: Its result.
    ///   - attempt: 0 for the first send, 1 for the first retry, ...
    /// - Returns: `.retry` with the new token, `.doNotRetryWithError` when the refresh failed, `.doNotRetry` otherwise.
    public func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>, attempt: Int
    ) async -> RetryDecision {
        guard attempt < refreshAttempts, let scheme = scheme(for: target), result.httpResponse?.statusCode == 401 else {
            return .doNotRetry
        }
        let prefix = scheme.value + " "
        let sentToken = request.value(forHTTPHeaderField: "Authorization").flatMap { value in
            value.hasPrefix(prefix) ? String(value.dropFirst(prefix.count)) : nil
        }
        let newToken: String
        do {
            newToken = try await store.token(replacing: sentToken)
        } catch {
            return .doNotRetryWithError(error)
        }
        var newRequest = request
        newRequest.setValue("\(scheme.value) \(newToken)", forHTTPHeaderField: "Authorization")
        return .retry(after: 0, request: newRequest)
    }
}

/// Holds the token and runs at most one refresh at a time.
final class TokenStore: @unchecked Sendable {
    private let lock = NSLock()
    private var token: String?
    private var refreshing: AsyncTask<String, Swift.Error>?
    private var refreshes = 0
    private let refresh: AccessTokenRefreshPlugin.RefreshClosure

    init(token: String?, refresh: @escaping AccessTokenRefreshPlugin.RefreshClosure) {
        self.token = token
        self.refresh = refresh
    }

    var snapshot: String? { lock.withLock { token } }
    var current: String? { get async { snapshot } }
    var refreshCount: Int { get async { lock.withLock { refreshes } } }

    /// A token to use instead of `sentToken`: the current one if it already changed, the result of the refresh in
    /// progress, or the result of a new refresh.
    func token(replacing sentToken: String?) async throws -> String {
        let task: AsyncTask<String, Swift.Error> = lock.withLock {
            if let refreshing { return refreshing }
            if let token, token != sentToken { return AsyncTask { token } }
            refreshes += 1
            let refresh = self.refresh
            let task = AsyncTask { [weak self] in
                do {
                    let newToken = try await refresh()
                    self?.lock.withLock {
                        self?.token = newToken
                        self?.refreshing = nil
                    }
                    return newToken
                } catch {
                    self?.lock.withLock { self?.refreshing = nil }
                    throw error
                }
            }
            refreshing = task
            return task
        }
        return try await task.value
    }
}
