import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// These functions are default mappings to `MoyaProvider`'s properties: endpoints, requests, session etc.
extension MoyaProvider {
    /// The endpoint for a target: `URL(target:)`, a `200` stub with `sampleData`, the target's method, task and
    /// headers.
    ///
    /// - Parameter target: The target to map.
    /// - Returns: The target's endpoint.
    public final class func defaultEndpointMapping(for target: Target) -> Endpoint {
        Endpoint(
            url: URL(target: target).absoluteString,
            sampleResponseClosure: { .networkResponse(200, target.sampleData) },
            method: target.method,
            task: target.task,
            httpHeaderFields: target.headers
        )
    }

    /// Builds the `URLRequest`; `requestMapping` and `parameterEncoding` errors pass through, any other error is
    /// wrapped as `.underlying(error, nil)` (so an `encodableMapping` error arrives wrapped, as in Moya).
    ///
    /// - Parameters:
    ///   - endpoint: The endpoint to build the request of, with `Endpoint.urlRequest()`.
    ///   - closure: Called at once with the request or the error.
    public final class func defaultRequestMapping(for endpoint: Endpoint, closure: RequestResultClosure) {
        do {
            let urlRequest = try endpoint.urlRequest()
            closure(.success(urlRequest))
        } catch MoyaError.requestMapping(let url) {
            closure(.failure(MoyaError.requestMapping(url)))
        } catch MoyaError.parameterEncoding(let error) {
            closure(.failure(MoyaError.parameterEncoding(error)))
        } catch {
            closure(.failure(MoyaError.underlying(error, nil)))
        }
    }

    /// A session with the default headers (`Accept-Encoding`, `Accept-Language`, `User-Agent`) on the shared HTTP
    /// client, with `startRequestsImmediately == false` (the name is kept from Moya; there is no Alamofire).
    ///
    /// - Returns: A new session that follows redirects and shares the process-wide HTTP client.
    public final class func defaultAlamofireSession() -> Session {
        Session(headers: Session.defaultHTTPHeaders, startRequestsImmediately: false)
    }
}
