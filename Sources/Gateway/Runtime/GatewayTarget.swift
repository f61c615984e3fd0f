import Foundation
import HTTPWire
import Moya
import Synchronization

/// One proxied call as a Moya `TargetType`: the upstream, the exact origin-form target to send, the method, the body and
/// the headers. Wrapped in `MultiTarget` and sent through the upstream's `MoyaProvider<MultiTarget>`.
struct GatewayTarget: TargetType, AccessTokenAuthorizable {
    let upstream: UpstreamConfig
    /// The upstream's origin (`http://host:port`), or `http://stub.invalid` for a stub; computed once per upstream.
    let origin: String
    /// Origin-form path and query, exactly as routed and rewritten (`/v1/users/7?x=1`).
    let upstreamTarget: String
    let method: Moya.Method
    let body: Data
    /// Headers that take part in the coalescing identity (forwarded upstream).
    let stableHeaders: [String: String]
    /// Headers specific to this caller (request id, forwarding headers); added by ``ForwardingHeadersPlugin`` so they
    /// do not split a coalesced flight.
    let perRequestHeaders: [(String, String)]
    /// The coalescing key when this request may share an upstream call; `nil` sends it alone.
    let flightKey: String?
    /// The route's whole-request deadline, if any.
    let timeout: Duration?
    /// The route's retry policy, if any (see ``RouteRetryPlugin``).
    let retries: RouteConfig.Retries?
    /// Counts the retries ``RouteRetryPlugin`` decided for this request (for the access log).
    let retryCount = RetryCount()

    var baseURL: URL { URL(string: origin) ?? URL(fileURLWithPath: "/") }
    var path: String { "" }
    var task: Moya.Task { body.isEmpty ? .requestPlain : .requestData(body) }
    var headers: [String: String]? { stableHeaders }
    var sampleData: Data { Data(upstream.stub?.body ?? []) }

    var validationType: ValidationType {
        switch upstream.validation {
        case .none: return .none
        case .success: return .successCodes
        case .successAndRedirect: return .successAndRedirectCodes
        }
    }

    var authorizationType: AuthorizationType? {
        switch upstream.accessToken?.type {
        case .bearer?: return .bearer
        case .basic?: return .basic
        case .custom(let scheme)?: return .custom(scheme)
        case nil: return nil
        }
    }

    /// The full upstream URL.
    var urlString: String { origin + upstreamTarget }
}

extension TargetType {
    /// The gateway target inside a `MultiTarget`, if this is one.
    var gatewayTarget: GatewayTarget? {
        if let multi = self as? MultiTarget { return multi.target as? GatewayTarget }
        return self as? GatewayTarget
    }
}

/// How many times a request was sent again; shared between the handler and ``RouteRetryPlugin``.
final class RetryCount: Sendable {
    private let count = Atomic<Int>(0)

    var value: Int { count.load(ordering: .relaxed) }

    func increment() { count.add(1, ordering: .relaxed) }
}
