import CoreMetrics
import HTTPServer
import HTTPWire

extension Telemetry {
    /// The server events the gateway counts: minimum-rate cuts (`moya_gateway_min_rate_cuts_total`). Called on loop
    /// threads; counting takes a registry lookup and never blocks.
    func serverEvents() -> HTTPServerEvents {
        HTTPServerEvents(minimumRateCut: { [self] direction, version in
            minimumRateCut(direction: direction, version: version)
        })
    }

    /// Counts a connection or HTTP/2 stream cut for moving bytes below its minimum rate.
    func minimumRateCut(direction: HTTPServerEvents.Direction, version: HTTPVersion) {
        CoreMetrics.Counter(label: Metric.minimumRateCuts,
                            dimensions: [("direction", direction.rawValue), ("protocol", version == .http2 ? "http2" : "http1")],
                            factory: metricsFactory).increment()
    }
}
