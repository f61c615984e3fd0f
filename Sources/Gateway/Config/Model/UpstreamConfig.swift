import HTTPWire

/// One of `upstreams`: where its calls go (or the stub that answers them), with its headers, timeouts, pool, TLS,
/// credentials, validation, circuit breaker and health checks.
package struct UpstreamConfig: Sendable, Equatable {
    package enum HTTP2Mode: String, Sendable, Equatable { case auto, always, never }

    /// `validation:` — Moya's `ValidationType`.
    package enum Validation: String, Sendable, Equatable {
        case none
        case success
        case successAndRedirect = "success_and_redirect"
    }

    package struct Timeout: Sendable, Equatable {
        /// Per attempt. Default 2s.
        package var connect: Duration = .seconds(2)
        /// Time to the response head, per attempt. Default 30s.
        package var response: Duration = .seconds(30)

        package init() {}
    }

    package struct Pool: Sendable, Equatable {
        /// Default 64.
        package var maxConnections: Int = 64
        /// Default `.auto` (h2 if ALPN offers it).
        package var http2: HTTP2Mode = .auto
        /// How long a request may wait for a connection (or an HTTP/2 stream) when the pool is at its limit before it
        /// fails with 503. Default 10 s.
        package var maxWait: Duration = .seconds(10)
        /// How long an idle connection to the upstream is kept for reuse. Default 60 s.
        package var idleTimeout: Duration = .seconds(60)
        /// Most requests waiting for a connection (or an HTTP/2 stream) per thread; more get 503 at once. Default
        /// 1024; 0 queues none.
        package var maxWaiting: Int = 1024
        /// Requests (HTTP/1.1) or streams (HTTP/2) sent on one connection before it is retired (it finishes what it
        /// carries and closes); 0 = no limit. Default 0.
        package var maxRequestsPerConnection: Int = 0
        /// `max_share`: while the pool is full and other callers wait, the most of it one caller (as `rate_limit` keys
        /// callers) may hold; its further requests wait behind the others'. Default 0.5; 1 turns it off.
        package var maxShare: Double = 0.5

        package init() {}
    }

    package struct TLS: Sendable, Equatable {
        /// Default true.
        package var verify: Bool = true
        /// Extra CA bundle, resolved path.
        package var caFile: String?

        package init() {}
    }

    package struct AccessToken: Sendable, Equatable {
        package enum Kind: Sendable, Equatable {
            case bearer
            case basic
            case custom(scheme: String)
        }

        package var type: Kind
        package var token: Secret

        package init(type: Kind, token: Secret) {
            self.type = type
            self.token = token
        }

        /// The `Authorization` header value (`Bearer TOKEN`, `Basic TOKEN`, `SCHEME TOKEN`), as Moya's
        /// `AccessTokenPlugin` builds it.
        package var authorizationValue: String {
            switch type {
            case .bearer: return "Bearer \(token.value)"
            case .basic: return "Basic \(token.value)"
            case .custom(let scheme): return "\(scheme) \(token.value)"
            }
        }
    }

    package struct Credentials: Sendable, Equatable {
        package var user: String
        package var password: Secret
        /// Send Basic up front instead of answering a 401 challenge. Default false.
        package var preemptive: Bool = false

        package init(user: String, password: Secret, preemptive: Bool = false) {
            self.user = user
            self.password = password
            self.preemptive = preemptive
        }
    }

    package var name: String
    /// Absent only for stub upstreams.
    package var baseURL: UpstreamURL?
    /// `servers`: the servers connections go to, in turn, instead of the base URL's host (which is still sent in
    /// `Host` and as the TLS server name); nil resolves the host.
    package var servers: [UpstreamServer]?
    /// Added to every request to this upstream.
    package var headers = HTTPFields()
    package var timeout = Timeout()
    package var pool = Pool()
    package var tls = TLS()
    package var accessToken: AccessToken?
    /// `access_token` with `type: oauth2_client_credentials` (then ``accessToken`` is nil).
    package var oauth2: OAuth2ClientCredentialsConfig?
    package var credentials: Credentials?
    /// Default `.none`.
    package var validation: Validation = .none
    /// When set, the upstream is never contacted over the network.
    package var stub: StubConfig?
    /// `moya-gateway spy`: recorded answers for an upstream that has a `base_url`: a request one of their responses
    /// matches is answered from them, any other is proxied. Not read from the file.
    package var spy: StubConfig?
    /// When set, calls are refused for a while after too many failed in a row.
    package var circuitBreaker: CircuitBreakerConfig?
    /// When set, each of the upstream's addresses is probed in the background, and one that fails its checks gets
    /// no requests until it passes again.
    package var healthCheck: HealthCheckConfig?

    package init(name: String, baseURL: UpstreamURL? = nil) {
        self.name = name
        self.baseURL = baseURL
    }

    package var isStub: Bool { stub != nil }
}

/// `circuit_breaker`: stop calling an upstream that keeps failing, and answer 503 at once instead.
package struct CircuitBreakerConfig: Sendable, Equatable {
    /// Failed calls in a row (no answer, or 502, 503 or 504) that open the circuit. Default 5.
    package var failures: Int = 5
    /// How long an open circuit refuses calls before it lets one trial call through. Default 10 s.
    package var openFor: Duration = .seconds(10)

    package init() {}
}

/// `health_check`: active checks of each address of an upstream (its `servers`, or its host name's addresses).
package struct HealthCheckConfig: Sendable, Equatable {
    /// The path (and query) probed with GET on each address. Required.
    package var path: String
    /// Time between two rounds of probes. Default 5 s.
    package var interval: Duration = .seconds(5)
    /// How long a probe may take. Default 1 s.
    package var timeout: Duration = .seconds(1)
    /// Failed probes in a row (no answer in time, or a status outside 200–399) that take an address out. Default 2.
    package var unhealthyAfter: Int = 2
    /// Passed probes in a row that bring it back. Default 2.
    package var healthyAfter: Int = 2
    /// Fields sent with every probe, over the upstream's `headers` and `User-Agent` (a health endpoint that wants a
    /// key of its own, say `${file:...}`). Never logged.
    package var headers = HTTPFields()

    package init(path: String) {
        self.path = path
    }
}
