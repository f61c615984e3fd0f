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
    private let durations: Mutex<[String: DurationHistogram]> = Mutex([:])
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
        registry.makeCounter(descriptor: Metric.requests, labels: [("route", route), ("status", String(record.status))]).increment()
        let histogram = durations.withLock { cache -> DurationHistogram in
            if let existing = cache[route] { return existing }
            let made = registry.makeDurationHistogram(descriptor: Metric.duration, labels: [("route", route)],
                                                      buckets: Telemetry.buckets)
            cache[route] = made
            return made
        }
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
        let milliseconds = record.duration.seconds * 1000
        return "{\"ts\":\"\(JSONLogHandler.timestamp())\",\"level\":\"info\",\"msg\":\"access\""
            + ",\"request_id\":\(string(record.requestID)),\"method\":\(string(record.method))"
            + ",\"path\":\(string(HeaderRedactor.redactQuery(in: record.path))),\"route\":\(string(record.route))"
            + ",\"upstream\":\(string(record.upstream))"
            + ",\"upstream_path\":\(string(record.upstreamPath.map(HeaderRedactor.redactQuery(in:))))"
            + ",\"status\":\(record.status),\"bytes_in\":\(record.bytesIn),\"bytes_out\":\(record.bytesOut)"
            + ",\"duration_ms\":\(String(format: "%.3f", milliseconds)),\"upstream_connect_ms\":null,\"upstream_ttfb_ms\":null"
            + ",\"coalesced\":\"\(record.coalesced)\",\"stubbed\":\(record.stubbed),\"retries\":\(record.retries)"
            + (record.upstreamError.map { ",\"upstream_error\":\(JSONLogHandler.quote($0))" } ?? "") + "}"
    }

    private func textLine(_ record: AccessRecord) -> String {
        "\(JSONLogHandler.timestamp()) access \(record.requestID) \(record.method) \(HeaderRedactor.redactQuery(in: record.path)) "
            + "route=\(record.route ?? "-") upstream=\(record.upstream ?? "-") status=\(record.status) "
            + "bytes_out=\(record.bytesOut) duration_ms=\(String(format: "%.3f", record.duration.seconds * 1000)) "
            + "coalesced=\(record.coalesced) stubbed=\(record.stubbed)"
    }
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
