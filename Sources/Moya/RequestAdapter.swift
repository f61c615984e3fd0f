import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A plugin that adapts every attempt of a request just before it is sent, and may wait to do so or fail the request:
/// the asynchronous counterpart of `prepare`, as Alamofire's `RequestAdapter` is the adapting half of its
/// `RequestInterceptor` (Moya has no such hook; ``RequestRetrier`` is the retrying half, as a plugin too).
/// ``AccessTokenSourcePlugin`` is one: it waits for a valid token from an ``AccessTokenSource`` and sets
/// `Authorization`.
///
/// Order, for a request sent over the network: the plugins' `prepare`, then `willSend` (once), then before each
/// attempt the `RequestAdapter` plugins in the order they were given, then the session's interceptor, then the
/// exchange; after it the ``RequestRetrier`` plugins. A retry is adapted again (the request the attempt before it was
/// adapted to, or the one a retrier returned), so an adapter that sets a header sets it anew for every attempt; a
/// request re-sent to answer a `Basic`/`Digest` challenge keeps what was adapted for the attempt it answers. Stubbed
/// requests are not adapted (nothing is sent).
///
/// A failure ends the request with `.underlying(error, nil)` (a `CancellationError` as the cancellation error Moya
/// reports, `NSURLErrorCancelled`): `didReceive` and `process` see it, the retriers are not asked.
public protocol RequestAdapter: PluginType {
    /// The request to send for this attempt.
    /// - Parameters:
    ///   - request: the prepared request (for a retry: the one sent last, or the one a retrier returned).
    ///   - target: the target, as the other hooks get it.
    /// - Returns: the request to send (`request` itself when there is nothing to change).
    /// - Throws: to fail the request.
    func adapt(_ request: URLRequest, for target: TargetType) async throws -> URLRequest
}

/// A `RequestAdapter` that adapts a `TransportRequest` (the transport lane's request, see `TransportPlugin`) with the
/// same effect as its `URLRequest` form.
package protocol TransportAdapter: RequestAdapter {
    func adapt(_ request: inout TransportRequest, for target: TargetType) async throws
}

/// A provider's `RequestAdapter` plugin, with its transport form looked up once.
struct AdapterPlugin {
    let adapter: RequestAdapter
    let transport: TransportAdapter?
}
