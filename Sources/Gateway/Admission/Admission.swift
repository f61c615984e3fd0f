import HTTPServerCore
import HTTPWire
import NetCore

/// Whether the gateway takes a request to an upstream: routing (404, 405, 400), the caller's API key (401), the
/// route's allowed clients (403), its body limit (413) and its rate limit (429), in that order.
///
/// A function of the request (its head, declared body length and upgrade input), the client's address, the snapshot
/// and the time: it answers nothing and logs nothing (``GatewayHandler`` turns the decision into the response and the
/// access-log line). The one state it touches is the route's rate limiter, which an admitted call draws a token from.
enum Admission {
    /// The methods a route without `match.methods` allows, as `Allow` lists them.
    static let allMethods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// What admission decided.
    enum Decision {
        /// Refused before a route was taken: TRACE and CONNECT (405), no route (404), no route for the method (405), a
        /// target routing refuses (400), an HTTP/2 tunnel asked of a route that has none (405).
        case unrouted(Refusal)
        /// Routed, then refused: no or an unknown API key (401), a client the route does not allow (403 with a key,
        /// 401 without), a declared body over the route's limit (413), over the rate limit (429), no upstream (502).
        case refused(Refusal, Routed)
        /// Routed and admitted: the call goes to `upstream`.
        case admitted(Routed, upstream: UpstreamProvider)
    }

    /// The gateway's own answer to a refused request.
    struct Refusal: Equatable {
        var code: GatewayErrorCode
        /// Headers beside the error body: `Allow` with a 405, `Retry-After` with a 429.
        var headers: [String: String] = [:]
        /// Whether the connection closes after the answer (a body too large is refused before a byte of it is read,
        /// and not read to be dropped).
        var closesConnection = false
    }

    /// A routed request: its route, the route's share of the snapshot, the path sent upstream and the API-key client.
    struct Routed {
        let route: CompiledRoute
        let runtime: RouteRuntime?
        let upstreamPath: String
        /// The API-key client the key named (`clients.api_keys`), once it was checked.
        var clientName: String?
    }

    /// Decides `request`. `clientAddress` is the client's address behind `trusted_proxies` (see ``ClientAddress``), the
    /// rate limit's caller when there is no API key; `now` (monotonic nanoseconds, ``EventLoop/now()``) is read only
    /// for a route with a rate limit.
    static func decide(
        _ request: borrowing HTTPServerRequest, clientAddress: String?, snapshot: GatewaySnapshot,
        now: () -> UInt64 = { EventLoop.now() }
    ) -> Decision {
        let method = request.head.method
        if MethodTest.isTraceOrConnect(method) {
            return .unrouted(Refusal(code: .methodNotAllowed, headers: ["Allow": allMethods.joined(separator: ", ")]))
        }
        var routed: Routed
        switch snapshot.routes.route(request.head) {
        case .notFound:
            return .unrouted(Refusal(code: .notFound))
        case .methodNotAllowed(let allow):
            return .unrouted(Refusal(code: .methodNotAllowed, headers: ["Allow": allow.joined(separator: ", ")]))
        case .badRequest:
            return .unrouted(Refusal(code: .badRequest))
        case .matched(let route, let path, _):
            routed = Routed(route: route, runtime: snapshot.runtime(of: route), upstreamPath: path)
        }
        let route = routed.route
        if WebSocketTunnel.isRefusedExtendedConnect(request, route: route, upstream: routed.runtime?.provider) {
            // An HTTP/2 client asking for a tunnel (RFC 8441) where there is none: a plain GET's 200 would tell it
            // the tunnel is open.
            return .unrouted(
                Refusal(
                    code: .methodNotAllowed,
                    headers: ["Allow": (route.allowedMethods ?? allMethods).joined(separator: ", ")]))
        }
        if let apiKeys = snapshot.config.clients?.apiKeys {
            guard let key = request.head.headers.first(name: apiKeys.header),
                let client = apiKeys.client(forKey: key)
            else {
                return .refused(Refusal(code: .unauthorized), routed)
            }
            routed.clientName = client.name
        }
        if let allowed = route.config.clients, !allowed.contains(routed.clientName ?? "") {
            return .refused(Refusal(code: routed.clientName == nil ? .unauthorized : .forbidden), routed)
        }
        if let declared = request.declaredBodyLength, declared > bodyLimit(route, snapshot) {
            return .refused(Refusal(code: .payloadTooLarge, closesConnection: true), routed)
        }
        if let limit = route.config.rateLimit, let limiter = routed.runtime?.rateLimiter {
            let caller =
                limit.by == .route ? "" : routed.clientName ?? clientAddress.map(ClientAddress.rateLimitKey) ?? ""
            if case .refused(let wait) = limiter.admit(caller, now: now()) {
                return .refused(
                    Refusal(code: .tooManyRequests, headers: ["Retry-After": RetryAfter.value(wait)]), routed)
            }
        }
        guard let upstream = routed.runtime?.provider else { return .refused(Refusal(code: .badGateway), routed) }
        return .admitted(routed, upstream: upstream)
    }

    /// The largest request body `route` takes: its `max_body_bytes`, else the server's.
    static func bodyLimit(_ route: CompiledRoute, _ snapshot: GatewaySnapshot) -> Int64 {
        route.config.maxBodyBytes ?? snapshot.config.server.limits.maxBodyBytes
    }
}
