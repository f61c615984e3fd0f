import CoreMetrics
import Synchronization

/// One route's metric handles: its requests by status, its duration, its upstream's first-byte time and its coalesced
/// requests by role. Each snapshot holds one per route (see ``GatewaySnapshot/runtime(of:)``), so a routed request
/// reaches them through its route, without hashing names. Handles are made on first use, so a route shows in
/// `/metrics` once it has been called; the registry hands out the same metric for the same name and labels, so a
/// reload's new handles count on.
final class RouteMetrics: Sendable {
    let route: String
    let upstream: String
    private let factory: GatewayMetricsFactory
    private let handles = Mutex(Handles())

    private struct Handles {
        /// A route answers with a handful of statuses: a list searched in order beats hashing (and an upstream that
        /// sends every status can make it no longer than the thousand three-digit codes).
        var requests: [(status: Int, counter: CoreMetrics.Counter)] = []
        var duration: CoreMetrics.Timer?
        var upstreamFirstByte: CoreMetrics.Timer?
        var coalesced: [(role: String, counter: CoreMetrics.Counter)] = []
    }

    init(route: String, upstream: String, factory: GatewayMetricsFactory) {
        self.route = route
        self.upstream = upstream
        self.factory = factory
    }

    /// The counter for `status`, the route's duration timer, and when `upstreamTimed` the upstream's first-byte timer.
    func handles(status: Int, upstreamTimed: Bool) -> (CoreMetrics.Counter, CoreMetrics.Timer, CoreMetrics.Timer?) {
        handles.withLock { handles in
            let counter: CoreMetrics.Counter
            if let known = handles.requests.first(where: { $0.status == status }) {
                counter = known.counter
            } else {
                counter = CoreMetrics.Counter(label: Metric.requests,
                                              dimensions: [("route", route), ("status", String(status))], factory: factory)
                handles.requests.append((status, counter))
            }
            let duration = handles.duration ?? CoreMetrics.Timer(label: Metric.duration, dimensions: [("route", route)],
                                                                 factory: factory)
            handles.duration = duration
            guard upstreamTimed else { return (counter, duration, nil) }
            let firstByte = handles.upstreamFirstByte ?? CoreMetrics.Timer(
                label: Metric.upstreamFirstByte, dimensions: [("upstream", upstream)], factory: factory)
            handles.upstreamFirstByte = firstByte
            return (counter, duration, firstByte)
        }
    }

    /// The counter of this route's coalesced requests in `role` (`leader` or `follower`).
    func coalescedCounter(role: String) -> CoreMetrics.Counter {
        handles.withLock { handles in
            if let known = handles.coalesced.first(where: { $0.role == role }) { return known.counter }
            let counter = CoreMetrics.Counter(label: Metric.coalesced, dimensions: [("route", route), ("role", role)],
                                              factory: factory)
            handles.coalesced.append((role, counter))
            return counter
        }
    }
}
