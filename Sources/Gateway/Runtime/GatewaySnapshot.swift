import Locking
import Logging
import Moya
import NetCore

/// Everything a request needs from one loaded configuration: routes, upstream providers, telemetry. Immutable; a reload
/// builds a new snapshot and swaps it in atomically, so requests in flight finish on the one they started with.
final class GatewaySnapshot: Sendable {
    let config: GatewayConfig
    let routes: RouteTable
    let providers: [String: UpstreamProvider]
    /// The rate limiters of the routes that set `rate_limit`, by route name.
    let rateLimiters: [String: RateLimiter]
    let telemetry: Telemetry
    /// The gateway's log (upstream exchanges at `debug`, see ``UpstreamExchangeLogging``; per-request warnings).
    let logger: Logger

    /// `previous`: the snapshot this one replaces; an upstream whose address and circuit breaker settings did not
    /// change keeps its circuit (a reload during an outage does not let a fresh burst of calls through), and a route
    /// whose rate limit did not change keeps its callers' budgets.
    init(
        config: GatewayConfig, group: EventLoopGroup, telemetry: Telemetry, logger: Logger,
        previous: GatewaySnapshot? = nil
    ) {
        self.config = config
        self.logger = logger
        self.routes = RouteTable(config: config)
        var providers: [String: UpstreamProvider] = [:]
        for upstream in config.upstreams {
            let exchangeLogger = UpstreamExchangeLogging.plugin(
                logger: logger, upstream: upstream.name, redactHeaders: config.logging.redactHeaders,
                apiKeyHeader: config.clients?.apiKeys?.header)
            let breaker = upstream.circuitBreaker.map { settings in
                previous?.providers[upstream.name].flatMap { old in
                    old.upstream.baseURL == upstream.baseURL && old.upstream.circuitBreaker == settings
                        ? old.breaker : nil
                } ?? CircuitBreaker(failureThreshold: settings.failures, openFor: settings.openFor)
            }
            let retries = config.routes.contains { $0.upstream == upstream.name && $0.retries != nil }
            let tunnels = config.routes.contains { $0.upstream == upstream.name && $0.websocket }
            // Instances the health checks took out stay out across a reload that keeps the upstream's addresses.
            let inherited =
                previous?.providers[upstream.name].flatMap { old in
                    old.upstream.baseURL == upstream.baseURL && old.upstream.servers == upstream.servers
                        ? old.healthExclusions : nil
                } ?? []
            // A token source whose endpoint, credentials and settings did not change keeps its token.
            let tokenSource = upstream.oauth2.map { settings in
                previous?.providers[upstream.name]?.tokenSource.flatMap { old in
                    old.identity == UpstreamTokenSource.Identity(settings) ? old : nil
                }
                    ?? UpstreamTokenSource(
                        upstream: upstream.name, config: settings, group: group, telemetry: telemetry,
                        logger: logger)
            }
            providers[upstream.name] = UpstreamProvider(
                upstream: upstream, group: group, exchangeLogger: exchangeLogger,
                breaker: breaker, retries: retries, tunnels: tunnels,
                health: (telemetry, logger, inherited), tokenSource: tokenSource)
            if let breaker { telemetry.circuit(upstream: upstream.name, isOpen: breaker.isOpen) }
        }
        // A circuit that no longer exists (its upstream or its `circuit_breaker` removed) is not left reading open.
        for (name, old) in previous?.providers ?? [:] where old.breaker != nil && providers[name]?.breaker == nil {
            telemetry.circuit(upstream: name, isOpen: false)
        }
        self.providers = providers
        var rateLimiters: [String: RateLimiter] = [:]
        for route in config.routes {
            guard let limit = route.rateLimit else { continue }
            let kept =
                previous?.config.routes.first { $0.name == route.name }?.rateLimit == limit
                ? previous?.rateLimiters[route.name] : nil
            rateLimiters[route.name] = kept ?? RateLimiter(requests: limit.requests, per: limit.per, burst: limit.burst)
        }
        self.rateLimiters = rateLimiters
        self.telemetry = telemetry
        var routeRuntimes = [RouteRuntime?](repeating: nil, count: config.routes.count)
        for route in routes.routes where routeRuntimes.indices.contains(route.declarationIndex) {
            routeRuntimes[route.declarationIndex] = RouteRuntime(
                provider: providers[route.upstream.name], rateLimiter: rateLimiters[route.name],
                metrics: telemetry.routeMetrics(route: route.name, upstream: route.upstream.name))
        }
        self.routeRuntimes = routeRuntimes
    }

    /// What a routed request needs of its route, by its position in the file (see ``runtime(of:)``).
    private let routeRuntimes: [RouteRuntime?]

    /// What a request routed to `route` (one of ``routes``) needs of it, found without a lookup by name.
    func runtime(of route: CompiledRoute) -> RouteRuntime? {
        routeRuntimes.indices.contains(route.declarationIndex) ? routeRuntimes[route.declarationIndex] : nil
    }
}

/// One route's share of a snapshot: its upstream's provider, its rate limiter and its metric handles. A class, so that
/// a request takes it with one reference count rather than one per field.
final class RouteRuntime: Sendable {
    let provider: UpstreamProvider?
    let rateLimiter: RateLimiter?
    let metrics: RouteMetrics

    init(provider: UpstreamProvider?, rateLimiter: RateLimiter?, metrics: RouteMetrics) {
        self.provider = provider
        self.rateLimiter = rateLimiter
        self.metrics = metrics
    }
}

/// The current snapshot, swapped atomically on reload.
final class GatewayStateBox: Sendable {
    private let snapshot: Locked<GatewaySnapshot>

    init(_ snapshot: GatewaySnapshot) { self.snapshot = Locked(snapshot) }

    var current: GatewaySnapshot { snapshot.withLock { $0 } }

    func replace(with new: GatewaySnapshot) { snapshot.withLock { $0 = new } }
}
