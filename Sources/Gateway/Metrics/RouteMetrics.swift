import CoreMetrics
import Locking
import Synchronization

/// One route's metric handles: its requests by status, its duration, its upstream's first-byte time and its other
/// counters (``CountedEvent``). Each snapshot holds one per route (see ``GatewaySnapshot/runtime(of:)``), so a routed
/// request reaches them through its route, without hashing names. Handles are made on first use, so a route shows in
/// `/metrics` once it has been called; the registry hands out the same metric for the same name and labels, so a
/// reload's new handles count on.
final class RouteMetrics: Sendable {
    let route: String
    let upstream: String
    private let factory: GatewayMetricsFactory
    private let handles = Locked(Handles())
    /// The handles of a `200` answer, once one was counted (see ``CommonHandles``): set once, retained until
    /// `deinit`. An `Atomic` of the unmanaged reference is specialized in place; `AtomicLazyReference.load()` is
    /// a generic call into the library (~640 instructions).
    private let common = Atomic<Unmanaged<CommonHandles>?>(nil)

    /// A `200` answer's handles, all made: most of a route's requests read them with one atomic load, without the
    /// lock and the search of ``Handles``. Set when a `200` is first counted, with the upstream's first-byte timer
    /// when that request timed the upstream (an upstream-timed request finds them here only then).
    private final class CommonHandles: Sendable {
        let counter: CoreMetrics.Counter
        let duration: CoreMetrics.Timer
        let upstreamFirstByte: CoreMetrics.Timer?

        init(counter: CoreMetrics.Counter, duration: CoreMetrics.Timer, upstreamFirstByte: CoreMetrics.Timer?) {
            self.counter = counter
            self.duration = duration
            self.upstreamFirstByte = upstreamFirstByte
        }
    }

    private struct Handles {
        /// A route answers with a handful of statuses: a list searched in order beats hashing (and an upstream that
        /// sends every status can make it no longer than the thousand three-digit codes).
        var requests: [(status: Int, counter: CoreMetrics.Counter)] = []
        var duration: CoreMetrics.Timer?
        var upstreamFirstByte: CoreMetrics.Timer?
        var counted: [(event: CountedEvent, counter: CoreMetrics.Counter)] = []
    }

    /// What else a request of this route may count: a coalesced request by role, a call refused by the route's rate
    /// limit or by its upstream's open circuit, an upstream failure by the error the client got.
    enum CountedEvent: Equatable, Sendable {
        case coalesced(role: String)
        case rateLimited
        case circuitRefused
        case upstreamError(GatewayErrorCode)
    }

    init(route: String, upstream: String, factory: GatewayMetricsFactory) {
        self.route = route
        self.upstream = upstream
        self.factory = factory
    }

    /// The counter for `status`, the route's duration timer, and when `upstreamTimed` the upstream's first-byte timer.
    func handles(status: Int, upstreamTimed: Bool) -> (CoreMetrics.Counter, CoreMetrics.Timer, CoreMetrics.Timer?) {
        guard status == 200 else { return lockedHandles(status: status, upstreamTimed: upstreamTimed) }
        if let common = common.load(ordering: .acquiring) {
            // Held by this object until `deinit`: read without a reference count of its own.
            let found = common._withUnsafeGuaranteedRef {
                common -> (CoreMetrics.Counter, CoreMetrics.Timer, CoreMetrics.Timer?)? in
                if !upstreamTimed { return (common.counter, common.duration, nil) }
                if let firstByte = common.upstreamFirstByte { return (common.counter, common.duration, firstByte) }
                return nil
            }
            return found ?? lockedHandles(status: status, upstreamTimed: upstreamTimed)
        }
        let made = lockedHandles(status: status, upstreamTimed: upstreamTimed)
        let handles = Unmanaged.passRetained(
            CommonHandles(counter: made.0, duration: made.1, upstreamFirstByte: made.2))
        if !common.compareExchange(expected: nil, desired: handles, ordering: .acquiringAndReleasing).exchanged {
            handles.release()
        }
        return made
    }

    deinit {
        common.load(ordering: .acquiring)?.release()
    }

    /// ``handles(status:upstreamTimed:)`` from the list, made on first use.
    private func lockedHandles(status: Int, upstreamTimed: Bool)
        -> (CoreMetrics.Counter, CoreMetrics.Timer, CoreMetrics.Timer?)
    {
        handles.withLock { handles in
            let counter: CoreMetrics.Counter
            if let known = handles.requests.first(where: { $0.status == status }) {
                counter = known.counter
            } else {
                counter = CoreMetrics.Counter(
                    label: Metric.requests,
                    dimensions: [("route", route), ("status", String(status))], factory: factory)
                handles.requests.append((status, counter))
            }
            let duration =
                handles.duration
                ?? CoreMetrics.Timer(
                    label: Metric.duration, dimensions: [("route", route)],
                    factory: factory)
            handles.duration = duration
            guard upstreamTimed else { return (counter, duration, nil) }
            let firstByte =
                handles.upstreamFirstByte
                ?? CoreMetrics.Timer(
                    label: Metric.upstreamFirstByte, dimensions: [("upstream", upstream)], factory: factory)
            handles.upstreamFirstByte = firstByte
            return (counter, duration, firstByte)
        }
    }

    /// The counter of `event`: kept here, so that a flood of refusals or failures (or of coalesced requests) does
    /// not look its metric up in the registry, labels rendered, for every request.
    func counter(for event: CountedEvent) -> CoreMetrics.Counter {
        handles.withLock { handles in
            if let known = handles.counted.first(where: { $0.event == event }) { return known.counter }
            let counter = Self.makeCounter(for: event, route: route, upstream: upstream, factory: factory)
            handles.counted.append((event, counter))
            return counter
        }
    }

    /// A new handle on `event`'s counter (the registry hands out the same metric for the same name and labels).
    static func makeCounter(
        for event: CountedEvent, route: String, upstream: String,
        factory: GatewayMetricsFactory
    ) -> CoreMetrics.Counter {
        let (label, dimensions): (String, [(String, String)])
        switch event {
        case .coalesced(let role): (label, dimensions) = (Metric.coalesced, [("route", route), ("role", role)])
        case .rateLimited: (label, dimensions) = (Metric.rateLimited, [("route", route)])
        case .circuitRefused: (label, dimensions) = (Metric.circuitRefused, [("upstream", upstream)])
        case .upstreamError(let code):
            (label, dimensions) = (Metric.upstreamErrors, [("upstream", upstream), ("error", code.rawValue)])
        }
        return CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory)
    }
}
