import CoreMetrics
import Foundation
import Locking
import NetCore
import Prometheus

/// What the access log and the metrics learn about one request.
struct AccessRecord: Sendable {
    var requestID: String
    var method: String
    var path: String
    var route: String?
    var upstream: String?
    var upstreamPath: String?
    var status = 0
    var bytesIn = 0
    var bytesOut = 0
    var duration: Duration = .zero
    /// What the duration histogram records instead of ``duration``, when set: a WebSocket's handshake (its line's
    /// duration is the tunnel's life, which would swamp the route's latencies).
    var timedDuration: Duration?
    var coalesced = "no"
    var stubbed = false
    var retries = 0
    /// Time to open a new upstream connection (`nil`: a pooled one was reused, or no network exchange).
    var upstreamConnect: Duration?
    /// Time from sending the request to the upstream's first response byte.
    var upstreamFirstByte: Duration?
    /// Why the upstream call failed, when it did (never contains secrets: client errors carry no headers).
    var upstreamError: String?
    /// The trace id of the request's `traceparent`, when it has a valid one.
    var traceID: String?
    /// The caller's address: the peer's, or behind `server.trusted_proxies` the client they forwarded for.
    var clientAddress: String?
    /// The API client's name, when the caller presented a known key (never the key).
    var client: String?
    /// The routed request's metric handles (`nil` before routing: those are counted under route `none`).
    var routeMetrics: RouteMetrics?

    init(requestID: String, method: String, path: String, bytesIn: Int) {
        self.requestID = requestID
        self.method = method
        self.path = path
        self.bytesIn = bytesIn
    }
}

/// The access log (swift-log: one `access` event per request, one JSON line through ``JSONLogHandler``) and the
/// metrics (swift-metrics, exported by swift-prometheus on the admin listener's `/metrics`).
package final class Telemetry: Sendable {
    package let registry: PrometheusCollectorRegistry
    /// Makes every metric (swift-metrics), into `registry`.
    let metricsFactory: GatewayMetricsFactory
    let sink: LogSink
    /// Whether the access log is written, and as JSON or text (reloadable).
    let settings: LogSettings
    /// The access log's swift-log handler, called directly (see ``JSONLogHandler/write(_:)``). `logging.access_log`
    /// alone turns the access log on or off: `logging.level` does not hide it.
    private let accessHandler: JSONLogHandler
    /// The metric handles of requests that carry none (see ``AccessRecord/routeMetrics``: those refused before
    /// routing), by route and upstream name, made on first use.
    private let unroutedMetrics = Locked<[UnroutedMetricKey: RouteMetrics]>([:])

    package init(registry: PrometheusCollectorRegistry, sink: LogSink, settings: LogSettings) {
        self.registry = registry
        self.metricsFactory = GatewayMetricsFactory(registry: registry)
        self.sink = sink
        self.settings = settings
        self.accessHandler = JSONLogHandler(sink: sink, settings: settings)
        Meter(label: Metric.lastReloadSuccessful, factory: metricsFactory).set(1.0)
    }

    /// The metrics in the Prometheus text format, as `/metrics` answers: the registry's, then the latency histograms.
    func exposition() -> [UInt8] {
        var text = registry.emitToBuffer()
        metricsFactory.latencies.emit(into: &text)
        return text
    }

    /// Counts and times a request, and writes its access-log line.
    func record(_ record: AccessRecord) {
        let route = record.route ?? "none"
        // The upstream's own time, once per network call (a follower's timings are its leader's).
        let upstream =
            record.upstreamFirstByte != nil && (record.coalesced == "no" || record.coalesced != "follower")
            ? record.upstream : nil
        let (requests, timer, upstreamTimer) =
            record.routeMetrics?.handles(status: record.status, upstreamTimed: upstream != nil)
            ?? cachedHandles(route: route, status: record.status, upstream: upstream)
        requests.increment()
        timer.recordNanoseconds(Int64(clamping: (record.timedDuration ?? record.duration).nanoseconds))
        if let upstreamTimer, let firstByte = record.upstreamFirstByte {
            upstreamTimer.recordNanoseconds(Int64(clamping: firstByte.nanoseconds))
        }
        if record.coalesced != "no" {
            count(.coalesced(role: record.coalesced), of: record.routeMetrics, route: route, upstream: "")
        }
        guard settings.accessLog else { return }
        accessHandler.write(AccessLogLine(record: record))
    }

    /// The handles for a request without ``AccessRecord/routeMetrics``, from the cache.
    private func cachedHandles(route: String, status: Int, upstream: String?)
        -> (CoreMetrics.Counter, CoreMetrics.Timer, CoreMetrics.Timer?)
    {
        let metrics = unroutedMetrics.withLock { cache in
            let key = UnroutedMetricKey(route: route, upstream: upstream ?? "")
            if let known = cache[key] { return known }
            let made = routeMetrics(route: route, upstream: upstream ?? "")
            cache[key] = made
            return made
        }
        return metrics.handles(status: status, upstreamTimed: upstream != nil)
    }

    /// Metric handles for a routed request of `route` (to `upstream`); see ``RouteMetrics``.
    func routeMetrics(route: String, upstream: String) -> RouteMetrics {
        RouteMetrics(route: route, upstream: upstream, factory: metricsFactory)
    }

    /// Counts a configuration reload and records whether it was taken (for alerting on a rejected reload, which
    /// otherwise only shows in the log).
    func reloaded(successfully: Bool) {
        CoreMetrics.Counter(
            label: Metric.configReloads, dimensions: [("result", successfully ? "success" : "failure")],
            factory: metricsFactory
        ).increment()
        Meter(label: Metric.lastReloadSuccessful, factory: metricsFactory).set(successfully ? 1.0 : 0.0)
    }

    /// Counts an upstream call of a route (with its handles, `metrics`) that failed with `code`.
    func upstreamError(upstream: String, code: GatewayErrorCode, metrics: RouteMetrics?) {
        count(.upstreamError(code), of: metrics, route: "", upstream: upstream)
    }

    /// Exports whether `upstream`'s circuit is open (1: calls are refused) or closed (0).
    func circuit(upstream: String, isOpen: Bool) {
        Meter(label: Metric.circuitOpen, dimensions: [("upstream", upstream)], factory: metricsFactory).set(
            isOpen ? 1.0 : 0.0)
    }

    /// Exports whether `server` (an address of `upstream`) passes its health checks.
    func serverHealth(upstream: String, server: String, healthy: Bool) {
        Meter(
            label: Metric.serverHealthy, dimensions: [("upstream", upstream), ("server", server)],
            factory: metricsFactory
        ).set(healthy ? 1.0 : 0.0)
    }

    /// Counts a call answered 429 by `route`'s rate limit.
    func rateLimited(route: String, metrics: RouteMetrics?) {
        count(.rateLimited, of: metrics, route: route, upstream: "")
    }

    /// Counts a call refused because its upstream's circuit is open.
    func circuitRefused(upstream: String, metrics: RouteMetrics?) {
        count(.circuitRefused, of: metrics, route: "", upstream: upstream)
    }

    /// Counts `event` through the route's handles, or (without them) through the registry.
    private func count(_ event: RouteMetrics.CountedEvent, of metrics: RouteMetrics?, route: String, upstream: String) {
        let counter =
            metrics?.counter(for: event)
            ?? RouteMetrics.makeCounter(for: event, route: route, upstream: upstream, factory: metricsFactory)
        counter.increment()
    }

    /// Exports how many client connections are open now.
    func openConnections(_ count: Int) {
        Meter(label: Metric.openConnections, factory: metricsFactory).set(Double(count))
        for source in gaugeSources.withLock({ $0 }) { source() }
    }

    /// What sets the gauges read at each scrape of `/metrics` (buffered bytes, dropped log lines).
    private let gaugeSources = Locked<[@Sendable () -> Void]>([])

    /// Adds `source`, run at each scrape of `/metrics` (with ``openConnections(_:)``) to bring its metrics up to date.
    func addScrapeSource(_ source: @escaping @Sendable () -> Void) {
        gaugeSources.withLock { $0.append(source) }
    }
}

/// The route and upstream of requests without their own metric handles.
struct UnroutedMetricKey: Hashable {
    let route: String
    let upstream: String
}

extension Telemetry {
    /// Counts `sink`'s dropped lines in `moya_gateway_log_lines_dropped_total`, brought up to date at each scrape.
    func countDroppedLogLines(of sink: LogSink) {
        let counter = CoreMetrics.Counter(label: Metric.logLinesDropped, factory: metricsFactory)
        counter.increment(by: 0)
        let counted = Locked(0)
        addScrapeSource {
            let dropped = sink.dropped
            let delta = counted.withLock { counted -> Int in
                defer { counted = max(counted, dropped) }
                return dropped - counted
            }
            if delta > 0 { counter.increment(by: delta) }
        }
    }
}
