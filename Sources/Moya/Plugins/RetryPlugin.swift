import Foundation
import HTTPClientCore
import HTTPWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how often to retry a request.
public struct RetryPolicy: Sendable {
    /// Retries after the first attempt (so at most `maxRetries + 1` sends).
    public var maxRetries: Int
    /// Methods that may be retried; by default the idempotent ones (GET, HEAD, PUT, DELETE, OPTIONS, TRACE).
    public var retryableMethods: Set<Moya.Method>
    /// Status codes that cause a retry.
    public var retryableStatusCodes: Set<Int>
    /// Whether connection-level failures (refused, reset before a response, timeouts, DNS) cause a retry.
    public var retriesConnectionFailures: Bool
    /// Delay before the first retry, in seconds; multiplied by `multiplier` for each further retry.
    public var baseDelay: TimeInterval
    /// The factor each further retry's delay grows by (2: doubled).
    public var multiplier: Double
    /// Upper bound for one delay, in seconds.
    public var maxDelay: TimeInterval
    /// Full jitter: each delay is drawn uniformly from `0...delay` (true), or the exact delay (false).
    public var jitter: Bool
    /// Honour a `Retry-After` header (seconds) on retryable responses, capped by `maxDelay`.
    public var respectsRetryAfter: Bool

    /// Creates a policy; the defaults retry idempotent requests twice, after up to 0.2 s and 0.4 s (full jitter).
    ///
    /// - Parameters:
    ///   - maxRetries: Retries after the first attempt.
    ///   - retryableMethods: Methods that may be retried.
    ///   - retryableStatusCodes: Status codes that cause a retry.
    ///   - retriesConnectionFailures: Whether connection-level failures cause a retry.
    ///   - baseDelay: Delay before the first retry, in seconds.
    ///   - multiplier: The factor each further delay grows by.
    ///   - maxDelay: Upper bound for one delay, in seconds.
    ///   - jitter: Whether each delay is drawn uniformly from `0...delay`.
    ///   - respectsRetryAfter: Whether a `Retry-After` header (seconds) sets the delay.
    public init(
        maxRetries: Int = 2,
        retryableMethods: Set<Moya.Method> = [.get, .head, .put, .delete, .options, .trace],
        retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retriesConnectionFailures: Bool = true,
        baseDelay: TimeInterval = 0.2,
        multiplier: Double = 2,
        maxDelay: TimeInterval = 5,
        jitter: Bool = true,
        respectsRetryAfter: Bool = true
    ) {
        self.maxRetries = maxRetries
        self.retryableMethods = retryableMethods
        self.retryableStatusCodes = retryableStatusCodes
        self.retriesConnectionFailures = retriesConnectionFailures
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.respectsRetryAfter = respectsRetryAfter
    }

    /// The exponential delay for retry number `attempt + 1` before jitter: `min(maxDelay, baseDelay * multiplier^attempt)`.
    ///
    /// - Parameter attempt: 0 for the first retry, 1 for the second, ...
    /// - Returns: The delay in seconds.
    public func backoff(attempt: Int) -> TimeInterval {
        let exponential = baseDelay * pow(multiplier, Double(max(attempt, 0)))
        return max(0, min(maxDelay, exponential.isFinite ? exponential : maxDelay))
    }

    /// Whether an error from the transport is a connection failure worth retrying.
    ///
    /// - Parameter error: The error inside `MoyaError.underlying(error, nil)`.
    /// - Returns: `true` for a connection that could not be made or was closed before a response started, a name that
    ///   did not resolve, and a pool that had no connection to give.
    public static func isConnectionFailure(_ error: Swift.Error) -> Bool {
        switch error {
        case HTTPClientError.connectFailed, HTTPClientError.connectTimeout, HTTPClientError.nameResolutionFailed,
            HTTPClientError.connectionClosed(responseStarted: false), HTTPClientError.poolExhausted,
            HTTPClientError.poolWaitTimeout:
            return true
        default:
            return false
        }
    }

    /// The delay before retrying after `result`, or nil when it should not be retried.
    ///
    /// - Parameters:
    ///   - request: The request that was sent (its method decides whether it may be retried).
    ///   - result: Its result.
    ///   - attempt: 0 for the first send, 1 for the first retry, ...
    /// - Returns: The delay in seconds, or nil.
    public func delay(for request: URLRequest, result: Result<Moya.Response, MoyaError>, attempt: Int) -> TimeInterval?
    {
        guard attempt < maxRetries,
            retryableMethods.contains(Moya.Method(rawValue: request.httpMethod ?? "GET"))
        else { return nil }
        var retryAfter: TimeInterval?
        switch result {
        case .success(let response):
            guard retryableStatusCodes.contains(response.statusCode) else { return nil }
            retryAfter = retryAfterSeconds(response)
        case .failure(let error):
            if let response = error.response {
                guard retryableStatusCodes.contains(response.statusCode) else { return nil }
                retryAfter = retryAfterSeconds(response)
            } else if case .underlying(let underlying, nil) = error, retriesConnectionFailures,
                RetryPolicy.isConnectionFailure(underlying)
            {
                retryAfter = nil
            } else {
                return nil
            }
        }
        if let retryAfter, respectsRetryAfter { return min(retryAfter, maxDelay) }
        let delay = backoff(attempt: attempt)
        return jitter ? TimeInterval.random(in: 0...delay) : delay
    }

    private func retryAfterSeconds(_ response: Moya.Response) -> TimeInterval? {
        guard let value = AuthenticationChallenge.headerValue(response.response, "Retry-After"),
            let seconds = TimeInterval(value.trimmingCharacters(in: .whitespaces)), seconds >= 0
        else { return nil }
        return seconds
    }
}

/// Retries idempotent requests after connection failures and retryable statuses, with exponential backoff and
/// full jitter (see `RetryPolicy`). Works on the network path; stubs are not retried.
public struct RetryPlugin: RequestRetrier {
    /// When and how often requests are retried.
    public let policy: RetryPolicy

    /// Creates a retry plugin.
    ///
    /// - Parameter policy: When and how often to retry; the default retries idempotent requests twice.
    public init(policy: RetryPolicy = RetryPolicy()) {
        self.policy = policy
    }

    /// Retries after the delay the policy gives, or not at all.
    ///
    /// - Parameters:
    ///   - request: The request just sent.
    ///   - target: The request's target.
    ///   - result: Its result after validation.
    ///   - attempt: 0 for the first send, 1 for the first retry, ...
    /// - Returns: `.retry(after:)` with the policy's delay, or `.doNotRetry`.
    public func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>, attempt: Int
    ) async -> RetryDecision {
        guard let delay = policy.delay(for: request, result: result, attempt: attempt) else { return .doNotRetry }
        return .retry(after: delay)
    }
}
