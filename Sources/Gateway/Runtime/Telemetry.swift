import Foundation
import Logging
import Prometheus
import Synchronization

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
    var coalesced = "no"
    var stubbed = false
    var retries = 0
    /// Time to open a new upstream connection (`nil`: a pooled one was reused, or no network exchange).
    var upstreamConnect: Duration?
    /// Time from sending the request to the upstream's first response byte.
    var upstreamFirstByte: Duration?
    /// Why the upstream call failed, when it did (never contains secrets: client errors carry no headers).
    var upstreamError: String?

    init(requestID: String, method: String, path: String, bytesIn: Int) {
        self.requestID = requestID
        self.method = method
        self.path = path
        self.bytesIn = bytesIn
    }
}

/// The access log (one JSON line per request) and the Prometheus metrics.
public final class Telemetry: Sendable {
    public let registry: PrometheusCollectorRegistry
    let sink: LogSink
    /// Whether the access log is written, and as JSON or text (reloadable).
    let settings: LogSettings
    /// The per-route metric handles, made on a route's (and status's) first request: looking them up in the
    /// registry by label costs string work and a lock per request.
    private let metrics: Mutex<MetricHandles> = Mutex(MetricHandles())
    private static let buckets: [Duration] = [.milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                                              .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                                              .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)]

    public init(registry: PrometheusCollectorRegistry, sink: LogSink, settings: LogSettings) {
        self.registry = registry
        self.sink = sink
        self.settings = settings
        registry.makeGauge(descriptor: Metric.lastReloadSuccessful).set(to: 1.0)
    }

    func record(_ record: AccessRecord) {
        let route = record.route ?? "none"
        // The upstream's own time, once per network call (a follower's timings are its leader's).
        let upstream = record.upstreamFirstByte != nil && record.coalesced != "follower" ? record.upstream : nil
        let (requests, histogram, upstreamHistogram) = metrics.withLock { cache -> (Counter, DurationHistogram, DurationHistogram?) in
            let key = RequestMetricKey(route: route, status: record.status)
            let counter: Counter
            let histogram: DurationHistogram
            if let existing = cache.requests[key], let known = cache.durations[route] {
                (counter, histogram) = (existing, known)
            } else {
                counter = cache.requests[key] ?? registry.makeCounter(
                    descriptor: Metric.requests, labels: [("route", route), ("status", String(record.status))])
                histogram = cache.durations[route] ?? registry.makeDurationHistogram(
                    descriptor: Metric.duration, labels: [("route", route)], buckets: Telemetry.buckets)
                cache.requests[key] = counter
                cache.durations[route] = histogram
            }
            guard let upstream else { return (counter, histogram, nil) }
            if let existing = cache.upstreamFirstByte[upstream] { return (counter, histogram, existing) }
            let upstreamHistogram = registry.makeDurationHistogram(
                descriptor: Metric.upstreamFirstByte, labels: [("upstream", upstream)], buckets: Telemetry.buckets)
            cache.upstreamFirstByte[upstream] = upstreamHistogram
            return (counter, histogram, upstreamHistogram)
        }
        requests.increment()
        histogram.record(record.duration)
        if let upstreamHistogram, let firstByte = record.upstreamFirstByte { upstreamHistogram.record(firstByte) }
        if record.coalesced != "no" {
            registry.makeCounter(descriptor: Metric.coalesced, labels: [("route", route), ("role", record.coalesced)]).increment()
        }
        guard settings.accessLog else { return }
        sink.write(settings.json ? jsonLine(record) : textLine(record))
    }

    /// Counts a configuration reload and records whether it was taken (for alerting on a rejected reload, which
    /// otherwise only shows in the log).
    func reloaded(successfully: Bool) {
        registry.makeCounter(descriptor: Metric.configReloads, labels: [("result", successfully ? "success" : "failure")]).increment()
        registry.makeGauge(descriptor: Metric.lastReloadSuccessful).set(to: successfully ? 1.0 : 0.0)
    }

    func upstreamError(upstream: String, code: GatewayErrorCode) {
        registry.makeCounter(descriptor: Metric.upstreamErrors, labels: [("upstream", upstream), ("error", code.rawValue)]).increment()
    }

    /// Exports whether `upstream`'s circuit is open (1: calls are refused) or closed (0).
    func circuit(upstream: String, isOpen: Bool) {
        registry.makeGauge(descriptor: Metric.circuitOpen, labels: [("upstream", upstream)]).set(to: isOpen ? 1.0 : 0.0)
    }

    /// Counts a call answered 429 by `route`'s rate limit.
    func rateLimited(route: String) {
        registry.makeCounter(descriptor: Metric.rateLimited, labels: [("route", route)]).increment()
    }

    /// Counts a call refused because its upstream's circuit is open.
    func circuitRefused(upstream: String) {
        registry.makeCounter(descriptor: Metric.circuitRefused, labels: [("upstream", upstream)]).increment()
    }

    /// The access log's JSON line, appended into one reserved string (no intermediate concatenations).
    private func jsonLine(_ record: AccessRecord) -> String {
        func append(_ value: String?, to line: inout String) {
            if let value { JSONLogHandler.appendQuoted(value, to: &line) } else { line += "null" }
        }
        var line = ""
        line.reserveCapacity(384 + record.path.utf8.count + (record.upstreamPath?.utf8.count ?? 0))
        line += "{\"ts\":\""
        line += JSONLogHandler.timestamp()
        line += "\",\"level\":\"info\",\"msg\":\"access\",\"request_id\":"
        append(record.requestID, to: &line)
        line += ",\"method\":"
        append(record.method, to: &line)
        line += ",\"path\":"
        append(HeaderRedactor.redactQuery(in: record.path), to: &line)
        line += ",\"route\":"
        append(record.route, to: &line)
        line += ",\"upstream\":"
        append(record.upstream, to: &line)
        line += ",\"upstream_path\":"
        append(record.upstreamPath.map(HeaderRedactor.redactQuery(in:)), to: &line)
        line += ",\"status\":"
        line += String(record.status)
        line += ",\"bytes_in\":"
        line += String(record.bytesIn)
        line += ",\"bytes_out\":"
        line += String(record.bytesOut)
        line += ",\"duration_ms\":"
        line += Telemetry.milliseconds(record.duration)
        line += ",\"upstream_connect_ms\":"
        line += Telemetry.milliseconds(record.upstreamConnect)
        line += ",\"upstream_ttfb_ms\":"
        line += Telemetry.milliseconds(record.upstreamFirstByte)
        line += ",\"coalesced\":\""
        line += record.coalesced
        line += "\",\"stubbed\":"
        line += record.stubbed ? "true" : "false"
        line += ",\"retries\":"
        line += String(record.retries)
        if let error = record.upstreamError {
            line += ",\"upstream_error\":"
            JSONLogHandler.appendQuoted(error, to: &line)
        }
        line += "}"
        return line
    }

    /// Milliseconds with three decimals (rounded to the microsecond), or `null`; integer arithmetic, no
    /// `String(format:)`.
    static func milliseconds(_ duration: Duration?) -> String {
        guard let duration else { return "null" }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
        let magnitude = nanoseconds.magnitude
        let micros = (magnitude &+ 500) / 1000
        let fraction = micros % 1000
        var text = nanoseconds < 0 && micros > 0 ? "-" : ""
        text += String(micros / 1000)
        text += fraction < 10 ? ".00" : fraction < 100 ? ".0" : "."
        text += String(fraction)
        return text
    }

    private func textLine(_ record: AccessRecord) -> String {
        "\(JSONLogHandler.timestamp()) access \(record.requestID) \(record.method) \(HeaderRedactor.redactQuery(in: record.path)) "
            + "route=\(record.route ?? "-") upstream=\(record.upstream ?? "-") status=\(record.status) "
            + "bytes_out=\(record.bytesOut) duration_ms=\(Telemetry.milliseconds(record.duration)) "
            + "coalesced=\(record.coalesced) stubbed=\(record.stubbed)"
    }
}

/// A request counter's labels.
struct RequestMetricKey: Hashable {
    let route: String
    let status: Int
}

/// The cached metric handles of a `Telemetry`.
struct MetricHandles {
    var requests: [RequestMetricKey: Counter] = [:]
    var durations: [String: DurationHistogram] = [:]
    var upstreamFirstByte: [String: DurationHistogram] = [:]
}

/// The gateway's metric names (`moya_gateway_*`).
enum Metric {
    static var requests: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "requests", unitName: "total",
                                               helpText: "Requests answered, by route and status") }
    static var duration: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "request_duration", unitName: "seconds",
                                               helpText: "Time from request head to response, by route") }
    static var upstreamFirstByte: MetricNameDescriptor {
        MetricNameDescriptor(namespace: "moya_gateway", metricName: "upstream_first_byte", unitName: "seconds",
                             helpText: "Time from sending a request upstream to its first response byte, by upstream")
    }
    static var coalesced: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "coalesced_requests", unitName: "total",
                                                helpText: "Requests that shared an upstream call, by role (leader or follower)") }
    static var upstreamErrors: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "upstream_errors", unitName: "total",
                                                     helpText: "Upstream calls that failed, by upstream and error") }
    static var configReloads: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "config_reloads", unitName: "total",
                                                    helpText: "Configuration reloads (SIGHUP), by result (success or failure)") }
    static var lastReloadSuccessful: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "config_last_reload_successful",
                                                           unitName: "", helpText: "1 when the last reload was taken (or none was tried), 0 when it was rejected") }
    static var circuitOpen: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "upstream_circuit_open",
                                                  unitName: "", helpText: "1 while the upstream's circuit is open (calls refused), else 0") }
    static var circuitRefused: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "upstream_circuit_refused", unitName: "total",
                                                     helpText: "Calls answered 503 without contacting the upstream because its circuit was open") }
    static var rateLimited: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "rate_limited", unitName: "total",
                                                  helpText: "Calls answered 429 by a route's rate limit, by route") }
    static var openConnections: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "open", unitName: "connections",
                                                      helpText: "Client connections open now") }
}
