import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a ``RequestRetrier`` decides after a network attempt.
public enum RetryDecision {
    /// Deliver the result as it is.
    case doNotRetry
    /// Send again after `delay` seconds, with `request` when given (for example with a new `Authorization` header),
    /// otherwise with the same request.
    case retry(after: TimeInterval = 0, request: URLRequest? = nil)
    /// Do not send again, and fail with `error` (as `.underlying(error, response)`, where `response` is the
    /// attempt's response if it had one), as Alamofire's `.doNotRetryWithError`.
    case doNotRetryWithError(Swift.Error)
}

/// A plugin that can have a failed network attempt sent again (Moya has no such hook; Alamofire's
/// `RequestRetrier` plays this role there).
///
/// After every network attempt the provider asks its `RequestRetrier` plugins, in order, until one says `.retry` or
/// `.doNotRetryWithError`.
/// `prepare`/`willSend` run once before the first attempt and `didReceive` once with the final result. Stubbed
/// requests are not retried. The provider stops after 16 attempts whatever the retriers say.
public protocol RequestRetrier: PluginType {
    /// Decides whether a network attempt is sent again.
    ///
    /// - Parameters:
    ///   - request: The request just sent.
    ///   - target: The target of the request, as the provider's plugins see it.
    ///   - result: Its result after validation (a validation failure is `.underlying(MoyaError.statusCode, response)`).
    ///   - attempt: 0 for the first send, 1 for the first retry, ...
    /// - Returns: `.doNotRetry` to let the next retrier decide (or deliver `result` when none is left), `.retry` to
    ///   send again, `.doNotRetryWithError` to fail with another error.
    func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>, attempt: Int
    ) async -> RetryDecision
}

extension Result where Success == Moya.Response, Failure == MoyaError {
    /// The HTTP response of a result, whether it succeeded or failed with a response.
    var httpResponse: Moya.Response? {
        switch self {
        case .success(let response): return response
        case .failure(let error): return error.response
        }
    }
}

/// A provider's `RequestRetrier` plugin, with its `TransportRetrier` form when it has one.
struct RetrierPlugin {
    let retrier: RequestRetrier
    let transport: TransportRetrier?
}
