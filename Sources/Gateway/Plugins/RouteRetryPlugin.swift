import Foundation
import HTTPClientCore
import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Applies a route's `retries`: idempotent methods only, and only when no response byte arrived (connect failures,
/// connections closed before a response, response timeouts before any byte; never
/// ``HTTPClientError/responseBodyTimeout``) or the upstream answered one of the configured statuses. `attempts` counts
/// the first try; `backoff` pauses between attempts. No attempt starts that the route's
/// deadline would not leave time for (the last answer stands).
struct RouteRetryPlugin: TransportRetrier, TransportPlugin {
    func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        decision(for: target, result: result, attempt: attempt)
    }

    func retry(
        _ request: TransportRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        decision(for: target, result: result, attempt: attempt)
    }

    func prepare(_ request: inout TransportRequest, target: TargetType) {}

    private func decision(for target: TargetType, result: Result<Moya.Response, MoyaError>, attempt: Int)
        -> RetryDecision
    {
        guard let gateway = GatewayTarget.unwrapped(target), let retries = gateway.retries,
            attempt + 1 < retries.attempts,
            gateway.method.isIdempotent
        else { return .doNotRetry }
        if let deadline = gateway.deadline, ContinuousClock.now + (retries.backoff ?? .zero) >= deadline {
            return .doNotRetry
        }
        let decision = Self.decision(retries: retries, result: result)
        if case .retry = decision { gateway.countRetry() }
        return decision
    }

    private static func decision(retries: RouteConfig.Retries, result: Result<Moya.Response, MoyaError>)
        -> RetryDecision
    {
        let delay = retries.backoff?.seconds ?? 0
        switch result {
        case .success(let response):
            return retries.statuses.contains(response.statusCode) ? .retry(after: delay) : .doNotRetry
        case .failure(let error):
            if let response = error.response {
                return retries.statuses.contains(response.statusCode) ? .retry(after: delay) : .doNotRetry
            }
            guard case .underlying(let underlying, _) = error, let client = underlying as? HTTPClientError else {
                return .doNotRetry
            }
            switch client {
            case .connectFailed, .connectTimeout, .nameResolutionFailed, .poolExhausted, .poolWaitTimeout,
                .responseTimeout, .connectionClosed(responseStarted: false):
                return .retry(after: delay)
            default:
                return .doNotRetry
            }
        }
    }
}
