import Logging
import Moya
import NetCore
import Synchronization

/// Everything a request needs from one loaded configuration: routes, upstream providers, telemetry. Immutable; a reload
/// builds a new snapshot and swaps it in atomically, so requests in flight finish on the one they started with.
final class GatewaySnapshot: Sendable {
    let config: GatewayConfig
    let routes: RouteTable
    let providers: [String: UpstreamProvider]
    let telemetry: Telemetry
    /// The gateway's log (upstream exchanges at `debug`, see ``UpstreamExchangeLogging``; per-request warnings).
    let logger: Logger

    init(config: GatewayConfig, group: EventLoopGroup, telemetry: Telemetry, logger: Logger) {
        self.config = config
        self.logger = logger
        self.routes = RouteTable(config: config)
        var providers: [String: UpstreamProvider] = [:]
        for upstream in config.upstreams {
            let exchangeLogger = UpstreamExchangeLogging.plugin(
                logger: logger, upstream: upstream.name, redactHeaders: config.logging.redactHeaders,
                apiKeyHeader: config.clients?.apiKeys?.header)
            providers[upstream.name] = UpstreamProvider(upstream: upstream, group: group, exchangeLogger: exchangeLogger)
        }
        self.providers = providers
        self.telemetry = telemetry
        hasInstantStubs = providers.values.contains { $0.answersInstantly }
    }

    /// Whether some upstream is a stub without latency (answered from the event loop, see
    /// `GatewayHandler.respondImmediately(to:)`).
    let hasInstantStubs: Bool
}

/// The current snapshot, swapped atomically on reload.
final class GatewayStateBox: Sendable {
    private let snapshot: Mutex<GatewaySnapshot>

    init(_ snapshot: GatewaySnapshot) { self.snapshot = Mutex(snapshot) }

    var current: GatewaySnapshot { snapshot.withLock { $0 } }

    func replace(with new: GatewaySnapshot) { snapshot.withLock { $0 = new } }
}
