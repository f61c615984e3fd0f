import CoreMetrics
import HTTPServerCore
import HTTPWire

#if canImport(Glibc)
import Glibc
#endif

extension Telemetry {
    /// The server events the gateway counts: minimum-rate cuts (`moya_gateway_min_rate_cuts_total`) and accepts that
    /// failed for want of descriptors or memory (`moya_gateway_accepts_refused_total`, and a line on stderr through
    /// `acceptFailures`). Called on loop threads; counting takes a registry lookup and never blocks.
    func serverEvents(acceptFailures: AcceptFailureReport) -> HTTPServerEvents {
        HTTPServerEvents(
            minimumRateCut: { [self] direction, version in minimumRateCut(direction: direction, version: version) },
            acceptFailed: { [self] code in
                acceptRefused(errno: code)
                acceptFailures.record(errno: code)
            })
    }

    /// Counts a connection or HTTP/2 stream cut for moving bytes below its minimum rate.
    func minimumRateCut(direction: HTTPServerEvents.Direction, version: HTTPVersion) {
        CoreMetrics.Counter(
            label: Metric.minimumRateCuts,
            dimensions: [("direction", direction.rawValue), ("protocol", version == .http2 ? "http2" : "http1")],
            factory: metricsFactory
        ).increment()
    }

    /// Counts an accept that failed with `errno` (EMFILE, ENFILE: `fd_limit`; ENOBUFS, ENOMEM: `memory`).
    func acceptRefused(errno code: Int32) {
        let reason = code == EMFILE || code == ENFILE ? "fd_limit" : "memory"
        CoreMetrics.Counter(label: Metric.acceptsRefused, dimensions: [("reason", reason)], factory: metricsFactory)
            .increment()
    }
}
