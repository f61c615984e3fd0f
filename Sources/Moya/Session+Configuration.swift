import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Alamofire's `Session(configuration:)`

public extension Session {

    /// Alamofire's initialiser, so `Session(configuration: configuration, startRequestsImmediately: false)` from
    /// Moya's documentation compiles. Of the configuration only `httpAdditionalHeaders` is used: they become the
    /// session's `headers` (non-string keys or values are skipped). Requests go through `Session.sharedClient`.
    convenience init(configuration: URLSessionConfiguration, startRequestsImmediately: Bool = true,
                     interceptor: RequestInterceptor? = nil, redirectHandler: Redirector = .follow) {
        var headers: [String: String] = [:]
        for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        self.init(headers: headers, startRequestsImmediately: startRequestsImmediately, interceptor: interceptor,
                  redirectHandler: redirectHandler)
    }

    /// A `URLSessionConfiguration` describing this session: `.default` with `httpAdditionalHeaders` set to
    /// `headers` (what Moya's `RequestType.sessionHeaders` and its tests read).
    var sessionConfiguration: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = headers
        return configuration
    }
}
