import CoreMetrics
import Prometheus

/// The swift-metrics backend of the gateway's metrics: every `Counter`, `Timer` and `Meter` the gateway makes goes to
/// one Prometheus registry (swift-prometheus), which `/metrics` renders, except timers: those are the gateway's own
/// ``LatencyHistogram``s (in ``latencies``, rendered after the registry). Unlike swift-prometheus's own factory it keeps
/// each metric's `# HELP` text and the gateway's latency buckets. It is passed to each metric explicitly
/// (`Counter(label:dimensions:factory:)`): nothing is bootstrapped process-wide, so several runtimes (tests) never
/// share metrics.
struct GatewayMetricsFactory: MetricsFactory, Sendable {
    let registry: PrometheusCollectorRegistry
    /// Every timer made (see ``makeTimer(label:dimensions:)``).
    let latencies = LatencyHistograms()

    /// The buckets of every latency histogram (`Timer`), in seconds.
    static let durationBuckets: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        let descriptor = Metric.descriptor(label)
        if dimensions.isEmpty { return registry.makeCounter(descriptor: descriptor) }
        return registry.makeCounter(descriptor: descriptor, labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        let descriptor = Metric.descriptor(label)
        if dimensions.isEmpty { return registry.makeCounter(descriptor: descriptor) }
        return registry.makeCounter(descriptor: descriptor, labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        let descriptor = Metric.descriptor(label)
        guard aggregate else { return makeGauge(descriptor, dimensions: dimensions) }
        let buckets = [0.001, 0.01, 0.1, 1, 10, 100, 1_000, 10_000]
        if dimensions.isEmpty { return registry.makeValueHistogram(descriptor: descriptor, buckets: buckets) }
        return registry.makeValueHistogram(descriptor: descriptor, labels: dimensions, buckets: buckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        makeGauge(Metric.descriptor(label), dimensions: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        latencies.histogram(
            name: Metric.name(label), help: Metric.help(label), labels: dimensions, buckets: Self.durationBuckets)
    }

    private func makeGauge(_ descriptor: MetricNameDescriptor, dimensions: [(String, String)]) -> Prometheus.Gauge {
        if dimensions.isEmpty { return registry.makeGauge(descriptor: descriptor) }
        return registry.makeGauge(descriptor: descriptor, labels: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? LatencyHistogram { latencies.remove(histogram) }
    }
}

/// The gateway's metrics: their swift-metrics labels (the Prometheus names, `moya_gateway_*`) and help texts.
enum Metric {
    static let requests = "moya_gateway_requests_total"
    static let duration = "moya_gateway_request_duration_seconds"
    static let upstreamFirstByte = "moya_gateway_upstream_first_byte_seconds"
    static let coalesced = "moya_gateway_coalesced_requests_total"
    static let upstreamErrors = "moya_gateway_upstream_errors_total"
    static let configReloads = "moya_gateway_config_reloads_total"
    static let lastReloadSuccessful = "moya_gateway_config_last_reload_successful"
    static let circuitOpen = "moya_gateway_upstream_circuit_open"
    static let circuitRefused = "moya_gateway_upstream_circuit_refused_total"
    static let rateLimited = "moya_gateway_rate_limited_total"
    static let openConnections = "moya_gateway_open_connections"
    static let serverHealthy = "moya_gateway_upstream_server_healthy"
    static let minimumRateCuts = "moya_gateway_min_rate_cuts_total"
    static let acceptsRefused = "moya_gateway_accepts_refused_total"
    static let tokenFetches = "moya_gateway_upstream_token_fetches_total"
    static let bufferedBytes = "moya_gateway_response_buffer_bytes"
    static let bufferSpilled = "moya_gateway_response_buffer_spilled_total"
    static let bufferOverflows = "moya_gateway_response_buffer_overflows_total"
    static let fairShareWaits = "moya_gateway_upstream_fair_share_waits_total"
    static let logLinesDropped = "moya_gateway_log_lines_dropped_total"

    private static let helpTexts: [String: String] = [
        requests: "Requests answered, by route and status",
        duration: "Time from request head to response, by route",
        upstreamFirstByte: "Time from sending a request upstream to its first response byte, by upstream",
        coalesced: "Requests that shared an upstream call, by role (leader or follower)",
        upstreamErrors: "Upstream calls that failed, by upstream and error",
        configReloads: "Configuration reloads (SIGHUP), by result (success or failure)",
        lastReloadSuccessful: "1 when the last reload was taken (or none was tried), 0 when it was rejected",
        circuitOpen: "1 while the upstream's circuit is open (calls refused), else 0",
        circuitRefused: "Calls answered 503 without contacting the upstream because its circuit was open",
        rateLimited: "Calls answered 429 by a route's rate limit, by route",
        openConnections: "Client connections open now",
        serverHealthy:
            "1 while an upstream address passes its health checks, 0 while it is taken out, by upstream and server",
        minimumRateCuts:
            "Client connections and HTTP/2 streams cut for moving bytes below the minimum rate, by direction (send: a response, receive: a request body) and protocol (http1, http2)",
        acceptsRefused:
            "Accepts that failed for want of file descriptors (reason fd_limit: EMFILE, ENFILE) or socket memory (reason memory); accepting pauses 100 ms and is retried",
        tokenFetches: "Requests to an upstream's OAuth 2.0 token endpoint, by upstream and result (success or failure)",
        bufferedBytes:
            "Bytes of proxied responses buffered for their clients now, in memory or in temporary files (where)",
        bufferSpilled: "Proxied responses that went on in a temporary file past their memory buffer",
        bufferOverflows:
            "Buffered responses whose rest went at the client's pace: a temporary file cap reached, or a file error (cause)",
        fairShareWaits:
            "Requests passed over for a connection or stream because their caller held more than its share of a full upstream pool, by upstream",
        logLinesDropped: "Log lines dropped because the output was full or stuck (a full disk, a pipe nobody reads)"
    ]

    /// The Prometheus name and `# HELP` text of the metric labelled `label` (no help for a label the gateway does not
    /// define; an empty label, which Prometheus cannot name, becomes `unnamed`).
    static func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name(label), unitName: "", helpText: help(label))
    }

    /// The Prometheus name of the metric labelled `label`.
    static func name(_ label: String) -> String { label.isEmpty ? "unnamed" : label }

    /// The `# HELP` text of the metric labelled `label` (empty for a label the gateway does not define).
    static func help(_ label: String) -> String { helpTexts[label] ?? "" }
}
