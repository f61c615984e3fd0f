import Foundation
import Logging
import Prometheus
import Synchronization

/// What the access log and the metrics learn about one request.
struct AccessRecord {
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
    let accessLog: Bool
    let json: Bool
    /// The per-route metric handles, made on a route's (and status's) first request: looking them up in the
    /// registry by label costs string work and a lock per request.
    private let metrics: Mutex<MetricHandles> = Mutex(MetricHandles())
    private static let buckets: [Duration] = [.milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                                              .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                                              .seconds(1), .seconds(2.5), .seconds(5), .seconds(10)]

    public init(registry: PrometheusCollectorRegistry, sink: LogSink, logging: LoggingConfig) {
        self.registry = registry
        self.sink = sink
        self.accessLog = logging.accessLog
        self.json = logging.format == .json
    }

    func record(_ record: AccessRecord) {
        let route = record.route ?? "none"
        let (requests, histogram) = metrics.withLock { cache -> (Counter, DurationHistogram) in
            let key = RequestMetricKey(route: route, status: record.status)
            if let existing = cache.requests[key], let histogram = cache.durations[route] { return (existing, histogram) }
            let counter = cache.requests[key] ?? registry.makeCounter(
                descriptor: Metric.requests, labels: [("route", route), ("status", String(record.status))])
            let histogram = cache.durations[route] ?? registry.makeDurationHistogram(
                descriptor: Metric.duration, labels: [("route", route)], buckets: Telemetry.buckets)
            cache.requests[key] = counter
            cache.durations[route] = histogram
            return (counter, histogram)
        }
        requests.increment()
        histogram.record(record.duration)
        if record.coalesced != "no" {
            registry.makeCounter(descriptor: Metric.coalesced, labels: [("route", route), ("role", record.coalesced)]).increment()
        }
        guard accessLog else { return }
        sink.write(json ? jsonLine(record) : textLine(record))
    }

    func upstreamError(upstream: String, code: GatewayErrorCode) {
        registry.makeCounter(descriptor: Metric.upstreamErrors, labels: [("upstream", upstream), ("error", code.rawValue)]).increment()
    }

    private func jsonLine(_ record: AccessRecord) -> String {
        func string(_ value: String?) -> String { value.map(JSONLogHandler.quote) ?? "null" }
        return "{\"ts\":\"\(JSONLogHandler.timestamp())\",\"level\":\"info\",\"msg\":\"access\""
            + ",\"request_id\":\(string(record.requestID)),\"method\":\(string(record.method))"
            + ",\"path\":\(string(HeaderRedactor.redactQuery(in: record.path))),\"route\":\(string(record.route))"
            + ",\"upstream\":\(string(record.upstream))"
            + ",\"upstream_path\":\(string(record.upstreamPath.map(HeaderRedactor.redactQuery(in:))))"
            + ",\"status\":\(record.status),\"bytes_in\":\(record.bytesIn),\"bytes_out\":\(record.bytesOut)"
            + ",\"duration_ms\":\(Telemetry.milliseconds(record.duration)),\"upstream_connect_ms\":\(Telemetry.milliseconds(record.upstreamConnect))"
            + ",\"upstream_ttfb_ms\":\(Telemetry.milliseconds(record.upstreamFirstByte))"
            + ",\"coalesced\":\"\(record.coalesced)\",\"stubbed\":\(record.stubbed),\"retries\":\(record.retries)"
            + (record.upstreamError.map { ",\"upstream_error\":\(JSONLogHandler.quote($0))" } ?? "") + "}"
    }

    /// Milliseconds with three decimals, or `null`.
    static func milliseconds(_ duration: Duration?) -> String {
        guard let duration else { return "null" }
        return String(format: "%.3f", duration.seconds * 1000)
    }

    private func textLine(_ record: AccessRecord) -> String {
        "\(JSONLogHandler.timestamp()) access \(record.requestID) \(record.method) \(HeaderRedactor.redactQuery(in: record.path)) "
            + "route=\(record.route ?? "-") upstream=\(record.upstream ?? "-") status=\(record.status) "
            + "bytes_out=\(record.bytesOut) duration_ms=\(String(format: "%.3f", record.duration.seconds * 1000)) "
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
}

/// The gateway's metric names (`moya_gateway_*`).
enum Metric {
    static var requests: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "requests", unitName: "total",
                                               helpText: "Requests answered, by route and status") }
    static var duration: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "request_duration", unitName: "seconds",
                                               helpText: "Time from request head to response, by route") }
    static var coalesced: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "coalesced_requests", unitName: "total",
                                                helpText: "Requests that shared an upstream call, by role (leader or follower)") }
    static var upstreamErrors: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "upstream_errors", unitName: "total",
                                                     helpText: "Upstream calls that failed, by upstream and error") }
    static var openConnections: MetricNameDescriptor { MetricNameDescriptor(namespace: "moya_gateway", metricName: "open", unitName: "connections",
                                                      helpText: "Client connections open now") }
}
