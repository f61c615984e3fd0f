import HTTPWire

/// One of `routes`: which requests it takes (`match`), the upstream it sends them to, and how (rewrite, coalescing,
/// WebSockets, who may call it, its deadline, retries, rate limit, body limit, buffering).
package struct RouteConfig: Sendable, Equatable {
    package struct Match: Sendable, Equatable {
        /// Exactly one of the three is set.
        package var path: String?
        package var pathPrefix: String?
        /// A template such as `/api/users/{id}`; a parameter matches one non-empty segment.
        package var pathParams: String?
        /// `nil` = every method. Case-sensitive; GET also allows HEAD.
        package var methods: [HTTPMethod]?
        /// Lower-cased host without port; `nil` = any host.
        package var host: String?

        package init(
            path: String? = nil, pathPrefix: String? = nil, pathParams: String? = nil,
            methods: [HTTPMethod]? = nil, host: String? = nil
        ) {
            self.path = path
            self.pathPrefix = pathPrefix
            self.pathParams = pathParams
            self.methods = methods
            self.host = host
        }
    }

    package struct Rewrite: Sendable, Equatable {
        package var stripPrefix: String?
        package var addPrefix: String?

        package init(stripPrefix: String? = nil, addPrefix: String? = nil) {
            self.stripPrefix = stripPrefix
            self.addPrefix = addPrefix
        }
    }

    package struct Retries: Sendable, Equatable {
        /// `attempts`: total attempts including the first (1 = no retry). Idempotent methods only, and only when no
        /// response byte arrived.
        package var attempts: Int
        /// Also retry when the upstream answers one of these statuses (default none).
        package var statuses: [Int] = []
        /// Pause between attempts (default none).
        package var backoff: Duration?

        package init(attempts: Int, statuses: [Int] = [], backoff: Duration? = nil) {
            self.attempts = attempts
            self.statuses = statuses
            self.backoff = backoff
        }
    }

    package var name: String
    package var match: Match
    /// The name of an upstream in ``GatewayConfig/upstreams``.
    package var upstream: String
    package var rewrite: Rewrite?
    /// Default false. Only GET and HEAD coalesce.
    package var coalesce: Bool = false
    package var coalesceVary: [String] = []
    /// Default false. When true, an HTTP/1.1 request asking to upgrade to `websocket` is relayed to the upstream as
    /// a WebSocket handshake and, once the upstream answers 101, its connection becomes a byte tunnel both ways.
    /// Other requests on the route are proxied as usual; an upgrade on a route without it is not forwarded.
    package var websocket: Bool = false
    /// How long a tunnel may carry nothing either way before it is closed (`websocket: { idle_timeout: }`); nil: the
    /// upstream's `timeout.response`.
    package var websocketIdleTimeout: Duration?
    /// The largest request body this route takes, above or below `server.limits.max_body_bytes` (an upload route's
    /// 1 GiB, a JSON API's 64 KiB); nil: the server's.
    package var maxBodyBytes: Int64?
    /// API-key client names allowed on this route; `nil` = any caller the `clients` section admits.
    package var clients: [String]?
    /// The whole request's deadline, retries included.
    package var timeout: Duration?
    package var retries: Retries?
    package var rateLimit: RateLimitConfig?
    /// Whether a long upstream answer is buffered (see ``BufferingConfig``) rather than relayed at the client's pace.
    /// Default true.
    package var buffering: Bool = true

    package init(name: String, match: Match, upstream: String) {
        self.name = name
        self.match = match
        self.upstream = upstream
    }
}

/// `routes[].rate_limit`: how often a caller may call a route; past it the gateway answers 429 with `Retry-After`.
package struct RateLimitConfig: Sendable, Equatable {
    /// Who shares a budget.
    package enum Scope: String, Sendable, Equatable {
        /// Each caller its own: the API-key client when `clients.api_keys` is set, else the peer address.
        case caller
        /// One budget for the whole route, whoever calls.
        case route
    }

    /// Calls allowed per `per`, once the burst is spent.
    package var requests: Int
    /// Default 1 s.
    package var per: Duration = .seconds(1)
    /// Calls allowed at once by a caller that has not called for a while. Default `requests`.
    package var burst: Int
    /// Default `caller`.
    package var by: Scope = .caller

    package init(requests: Int, per: Duration = .seconds(1), burst: Int? = nil, by: Scope = .caller) {
        self.requests = requests
        self.per = per
        self.burst = burst ?? requests
        self.by = by
    }
}
