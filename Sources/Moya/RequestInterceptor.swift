import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Alamofire's `RequestInterceptor` (which Moya re-exports), its adapting half: a session-wide step that may change
/// every request just before it is sent, or fail it. Pass one as `Session(configuration:startRequestsImmediately:interceptor:)`.
///
/// It runs after the plugins' `prepare` and `willSend`, before each attempt (a retry is adapted again), as
/// Alamofire runs a session's interceptor after Moya's own. A failure ends the request with `.underlying(error, nil)`.
/// Retrying is the job of ``RequestRetrier`` plugins here: Alamofire's `retry(_:for:dueTo:completion:)` works on
/// Alamofire's `Request`, which does not exist without Alamofire.
public protocol RequestInterceptor: Sendable {
    /// Calls `completion` with the request to send, or with the error that fails it.
    ///
    /// - Parameters:
    ///   - urlRequest: The request about to be sent, after the plugins' `prepare`.
    ///   - session: The session sending it.
    ///   - completion: Called once, from any thread, with the request to send or the error that fails the request.
    func adapt(
        _ urlRequest: URLRequest, for session: Session, completion: @escaping (Result<URLRequest, Error>) -> Void)
}

extension RequestInterceptor {
    /// Sends the request unchanged.
    ///
    /// - Parameters:
    ///   - urlRequest: The request about to be sent.
    ///   - session: The session sending it.
    ///   - completion: Called at once with `.success(urlRequest)`.
    public func adapt(
        _ urlRequest: URLRequest, for session: Session, completion: @escaping (Result<URLRequest, Error>) -> Void
    ) {
        completion(.success(urlRequest))
    }
}

extension Session {
    /// The request the session's interceptor makes of `request` (the request itself without one).
    func adapted(_ request: URLRequest) async throws -> URLRequest {
        guard let interceptor else { return request }
        return try await withCheckedThrowingContinuation { continuation in
            interceptor.adapt(request, for: self) { continuation.resume(with: $0) }
        }
    }
}
