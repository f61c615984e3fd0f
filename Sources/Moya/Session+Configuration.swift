import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Alamofire's `Session(configuration:)`

extension Session {

    /// Alamofire's initialiser, so `Session(configuration: configuration, startRequestsImmediately: false)` from
    /// Moya's documentation compiles. Of the configuration only `httpAdditionalHeaders` is used: they become the
    /// session's `headers` (non-string keys or values are skipped). Requests go through the process-wide HTTP client
    /// that every session made without one shares.
    ///
    /// - Parameters:
    ///   - configuration: Its `httpAdditionalHeaders` become the session's ``headers``.
    ///   - startRequestsImmediately: Accepted for Alamofire compatibility; the provider starts every request.
    ///   - interceptor: Adapts every request before it is sent (see ``RequestInterceptor``).
    ///   - redirectHandler: `.follow` (URLSession's behaviour, the default) or `.doNotFollow`.
    public convenience init(
        configuration: URLSessionConfiguration, startRequestsImmediately: Bool = true,
        interceptor: RequestInterceptor? = nil, redirectHandler: Redirector = .follow
    ) {
        self.init(
            headers: configuration.headers.dictionary, startRequestsImmediately: startRequestsImmediately,
            interceptor: interceptor, redirectHandler: redirectHandler)
    }

    /// A `URLSessionConfiguration` describing this session: `.default` with `httpAdditionalHeaders` set to
    /// `headers` (what Moya's `RequestType.sessionHeaders` and its tests read).
    public var sessionConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = headers
        return configuration
    }
}
