import HTTPWire
import Locking
import NetCore
import Synchronization

/// An HTTP/1.1 and HTTP/2 client with connection pools per origin and per event loop, keep-alive with idle expiry, a
/// bounded wait queue with a wait limit, connect and response timeouts, request bodies streamed with back-pressure
/// (see ``HTTPClientRequest/Body``), and a single safe retry of idempotent requests that failed on a reused connection
/// before any response byte arrived (never for a stream body already pulled from).
///
/// HTTP/2 (``Configuration/http2``) is negotiated by ALPN on TLS, or spoken with prior knowledge (h2c) on cleartext
/// when asked for; then one connection per origin per loop carries every request, as many at once as the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS allows (the rest wait in the same bounded queue).
///
/// A request made from a task running on one of the client's loops stays on that loop (and uses that loop's pool), so
/// a proxied request normally touches one thread from accept to response.
package final class HTTPClient: Sendable {
    /// Client-wide settings.
    package struct Configuration: Sendable {
        /// Time allowed to open a connection (TCP and TLS handshake).
        package var connectTimeout: Duration = .seconds(10)
        /// Time allowed from sending the request to the end of the response head, then the longest wait for the next
        /// response body bytes (not counted while a streamed body's reader is behind); `nil` waits forever. While a
        /// streamed request body is being sent, it is the longest time without progress (a chunk taken or written);
        /// the wait for the head counts from the body's end.
        package var responseTimeout: Duration? = .seconds(60)
        /// Most connections open to one origin at once, per loop.
        package var maxConnectionsPerOrigin: Int = 64
        /// Most HTTP/1.1 connections open to one origin at once across all of the client's loops; nil (the default)
        /// sets no client-wide cap. A loop that finds none left keeps its requests waiting (``maxWaitTime`` applies)
        /// while the other loops give up idle connections. HTTP/2 uses one connection per origin per loop.
        package var maxConnectionsPerOriginTotal: Int?
        /// Most requests waiting for a connection to one origin; more fail with ``HTTPClientError/poolExhausted``.
        package var maxWaitingRequestsPerOrigin: Int = 1024
        /// Longest time a request waits for a connection (every one of ``maxConnectionsPerOrigin`` busy, or the
        /// origin's protocol still being learned) or for an HTTP/2 stream (the server's concurrent-stream limit
        /// reached); then it fails with ``HTTPClientError/poolWaitTimeout``, never having been sent. `nil` waits as
        /// long as the request's deadline allows (a request's deadline always ends its wait, with
        /// ``HTTPClientError/responseTimeout``). Checked by the loop's 250 ms sweep, so a wait can last up to 250 ms
        /// longer. The default, 10 s, equals the default ``connectTimeout``: waiting for a connection is bounded
        /// like opening one.
        package var maxWaitTime: Duration? = .seconds(10)
        /// How long an idle pooled connection is kept and may be reused. Keep it below the server's own keep-alive
        /// timeout when the server does not announce it (`Keep-Alive: timeout=N` is honoured by itself): a request
        /// sent on a connection the server is closing fails, and only an idempotent one is retried.
        package var idleTimeout: Duration = .seconds(60)
        /// Largest response head accepted.
        package var maxResponseHeaderBytes: Int = 64 * 1024
        /// Most header fields accepted in a response.
        package var maxResponseHeaders: Int = 100
        /// Largest response body collected in memory.
        package var maxResponseBodyBytes: Int64 = 256 * 1024 * 1024
        /// TLS settings for `https` origins: verification on by default.
        package var tls: TLSClientConfiguration = TLSClientConfiguration()
        /// Decode `Content-Encoding: gzip`/`deflate` responses (and drop the header), with caps on the inflated size and
        /// ratio so a decompression bomb is an error, not an out-of-memory. Off by default: a proxy passes bodies through
        /// as they came. Moya's default session turns it on, as Alamofire does.
        package var decompression: Decompression? = nil
        /// How long a resolved host name is reused before it is resolved again (`.zero`: every request). Concurrent
        /// requests share one resolution; an expired name is resolved again in the background while requests go on
        /// to its last good addresses, which a refresh that fails keeps. Numeric hosts are never resolved.
        package var nameResolutionTTL: Duration = .seconds(30)
        /// When a host name has several addresses, requests take them in turn; one that refused a connection
        /// or did not answer within ``connectTimeout`` is passed over for this long (while another is left), as
        /// nginx's `fail_timeout` does.
        package var failedAddressPause: Duration = .seconds(10)
        /// When not empty, every connection goes to these servers' addresses, in turn as a name's addresses do,
        /// whatever the request's host, which is still sent in `Host` and as the TLS server name: a set of servers
        /// for one origin, as an nginx `upstream` block lists them. Numeric ones are used as they are; names are
        /// resolved together and again past ``nameResolutionTTL``, in the background, while requests go on to the
        /// last good addresses (a name that does not resolve is left out meanwhile). When the addresses change,
        /// idle connections to ones no longer listed are closed.
        package var servers: [Server] = []
        /// While an origin's pool is full and requests wait, the most of it (a fraction of its connections, HTTP/1.1:
        /// ``maxConnectionsPerOriginTotal``, else ``maxConnectionsPerOrigin``; HTTP/2: of a connection's streams) that
        /// one caller (``HTTPClientRequest/callerKey``) holds before its further requests wait behind other callers'
        /// (they keep their place among its own, and fail at ``maxWaitTime`` as any other). nil (the default) or 1:
        /// first come, first served.
        package var maxShare: Double?
        /// Called (on a loop) when a waiting request is first passed over for its caller's share (see ``maxShare``).
        package var onFairShareWait: (@Sendable () -> Void)?
        /// Whether to speak HTTP/2 to origins (see ``HTTP2Mode``); `.auto` by default.
        package var http2: HTTP2Mode = .auto
        /// SETTINGS this client sends on its HTTP/2 connections (receive windows, header list size).
        package var http2Settings: HTTP2Settings = HTTPClient.Configuration.defaultHTTP2Settings
        /// Most requests sent on one connection: an HTTP/1.1 connection that carried this many closes after the last
        /// response; an HTTP/2 one takes no new stream once this many were opened on it (requests waiting for it go
        /// to a new connection) and closes when its last stream ends. `nil` (the default): no limit.
        package var maxRequestsPerConnection: Int?

        /// How the client picks HTTP/2 or HTTP/1.1 for an origin.
        package enum HTTP2Mode: String, Sendable, Hashable {
            /// TLS: offer `h2,http/1.1` by ALPN and use HTTP/2 when the server picks it. Cleartext: HTTP/1.1.
            case auto
            /// TLS: offer only `h2` and fail when the server does not pick it. Cleartext: h2c with prior knowledge.
            case always
            /// HTTP/1.1 only.
            case never
        }

        /// Client defaults: larger receive windows than the protocol's 64 KiB (bodies are read as they arrive).
        package static var defaultHTTP2Settings: HTTP2Settings {
            var settings = HTTP2Settings()
            settings.initialWindowSize = 1 << 20
            settings.connectionWindowSize = 8 << 20
            settings.maxHeaderListSize = 64 * 1024
            settings.maxRequestsPerConnection = nil
            return settings
        }

        /// One of ``servers``: a host (numeric, `localhost` for 127.0.0.1, or a name) and a port.
        package struct Server: Sendable, Hashable, CustomStringConvertible {
            /// Without brackets for IPv6.
            package var host: String
            package var port: Int

            package init(host: String, port: Int) {
                self.host = host
                self.port = port
            }

            /// `host:port`, with brackets around an IPv6 host.
            package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
        }

        /// Limits for transparent response decoding.
        package struct Decompression: Sendable, Hashable {
            package var maxBytes: Int
            package var maxRatio: Int

            package init(maxBytes: Int = 64 * 1024 * 1024, maxRatio: Int = 1000) {
                self.maxBytes = maxBytes
                self.maxRatio = maxRatio
            }
        }

        package init() {}
    }

    package let configuration: Configuration
    package let group: EventLoopGroup
    private let ownsGroup: Bool
    private let tlsContext: Locked<TLSContext?>
    let resolutions: HostResolutionCache
    /// The addresses of ``Configuration/servers``, when any are configured.
    let serverList: ServerListResolution?
    private let pools: [UncheckedSendable<LoopPools>]
    private let budgets: HTTPOriginBudgets
    private let shareTables: HTTPOriginShareTables
    let isShutDown = Atomic<Bool>(false)
    /// Addresses taken out by ``exclude(_:)``; `hasExclusions` spares the lock while there are none.
    private let excluded = Locked<Set<SocketAddress>>([])
    private let hasExclusions = Atomic<Bool>(false)

    /// The client's event loop the caller is running on, or nil off its loops. Work started as a task preferring it
    /// (`Task(executorPreference:)`) stays on that thread, where the client runs requests made from it.
    package var currentLoop: EventLoop? { group.loops.first { $0.inEventLoop } }

    /// The pools of one loop. Loop thread only: its accesses cannot overlap, so they skip dynamic exclusivity checks
    /// (the sweep iterates a copy of the pools).
    final class LoopPools {
        @exclusivity(unchecked) var byOrigin: [HTTPOrigin: HTTPOriginPool] = [:]
        @exclusivity(unchecked) var sweepID: Int?
        /// The pool found last: a proxy sends most requests to the same origin, and comparing it costs less than
        /// hashing it for the dictionary.
        @exclusivity(unchecked) var last: HTTPOriginPool?
    }

    /// Creates a client on `group`'s loops, or on a private loop when `group` is nil.
    package convenience init(configuration: Configuration = Configuration(), group: EventLoopGroup? = nil) {
        self.init(
            configuration: configuration, group: group,
            resolver: { try await OffLoop.resolve(host: $0, port: $1) })
    }

    /// A client whose host names resolve with `resolver` (tests: a name with several addresses).
    init(configuration: Configuration, group: EventLoopGroup?, resolver: @escaping HostResolutionCache.Resolver) {
        self.configuration = configuration
        if let group {
            self.group = group
            ownsGroup = false
        } else {
            // A private single loop; failing to create one leaves a process without descriptors, where nothing works.
            self.group = (try? EventLoopGroup(threads: 1)) ?? HTTPClient.fallbackGroup()
            ownsGroup = true
        }
        tlsContext = Locked(nil)
        resolutions = HostResolutionCache(ttl: configuration.nameResolutionTTL, resolver: resolver)
        serverList =
            configuration.servers.isEmpty
            ? nil
            : ServerListResolution(
                servers: configuration.servers, ttl: configuration.nameResolutionTTL,
                resolver: resolver)
        pools = self.group.loops.map { _ in UncheckedSendable(LoopPools()) }
        budgets = HTTPOriginBudgets(limit: configuration.maxConnectionsPerOriginTotal)
        shareTables = HTTPOriginShareTables(
            share: configuration.maxShare,
            capacity: configuration.maxConnectionsPerOriginTotal
                ?? configuration.maxConnectionsPerOrigin)
    }

    private static func fallbackGroup() -> EventLoopGroup {
        while true {
            if let group = try? EventLoopGroup(threads: 1) { return group }
        }
    }

    deinit {
        shutdown()
        if ownsGroup { group.shutdown() }
    }

    /// Sends `request` and collects the whole response.
    /// - Parameters:
    ///   - deadline: when the whole exchange must be done, retries included.
    ///   - timeout: how long the whole exchange may take from now (measured on the client's own clock, which costs no
    ///     extra reading of it); with a `deadline` too, the earlier of the two applies.
    ///   - progress: upload and download progress callbacks.
    /// - Throws: ``HTTPClientError``; ``HTTPClientError/cancelled`` when the calling task is cancelled.
    package func execute(
        _ request: HTTPClientRequest, deadline: ContinuousClock.Instant? = nil, timeout: Duration? = nil,
        progress: HTTPClientProgress = HTTPClientProgress()
    ) async throws -> HTTPClientResponse {
        try await run(request, deadline: deadline, timeout: timeout, progress: progress) { .collected($0) }
    }

    /// Sends `request` and returns as soon as the response head arrived; the body follows as a back-pressured stream
    /// (see ``HTTPClientStreamingResponse``). `deadline` and the response timeout still apply to the body: past the
    /// deadline, or a response timeout without body bytes while the reader keeps up, the stream fails with
    /// ``HTTPClientError/responseBodyTimeout``. Not retried once the head arrived; decompression is not applied.
    /// `timeout` as in ``execute(_:deadline:timeout:progress:)``.
    /// - Throws: ``HTTPClientError``, before the head; errors after it end the body stream.
    package func execute(
        streaming request: HTTPClientRequest, deadline: ContinuousClock.Instant? = nil,
        timeout: Duration? = nil,
        progress: HTTPClientProgress = HTTPClientProgress()
    ) async throws -> HTTPClientStreamingResponse {
        try await run(request, deadline: deadline, timeout: timeout, progress: progress) { .streamed($0) }
    }

    /// Sends `request` and collects the response when its head declares a body of at most `threshold` bytes (or none);
    /// otherwise returns at the head with the body as a back-pressured stream, as `execute(streaming:)` does. One
    /// exchange for both, so a caller relaying bodies of any size pays for a stream only when it needs one. The
    /// collected case is decoded as configured; the streamed one is not. The collected-body limit does not apply.
    /// `timeout` as in ``execute(_:deadline:timeout:progress:)``.
    package func execute(
        _ request: HTTPClientRequest, streamingBodiesLongerThan threshold: Int,
        deadline: ContinuousClock.Instant? = nil, timeout: Duration? = nil,
        progress: HTTPClientProgress = HTTPClientProgress()
    ) async throws -> HTTPClientResponseOrStream {
        try await run(request, deadline: deadline, timeout: timeout, progress: progress) {
            .collectedOrStreamed(threshold: threshold, $0)
        }
    }

    private func run<Result: Sendable>(
        _ request: HTTPClientRequest, deadline: ContinuousClock.Instant?, timeout: Duration?,
        progress: HTTPClientProgress,
        delivery: @Sendable (UnsafeContinuation<Result, any Error>) -> HTTPClientExchange.Delivery
    ) async throws -> Result {
        guard !isShutDown.load(ordering: .relaxed) else { throw HTTPClientError.shutDown }
        try Task.checkCancellation()
        // Only what may wait is done here; the rest is synchronous (`prepare`), which keeps this async frame small:
        // each local an async function holds costs a task allocation.
        var file: OffLoopFile?
        if case .file(let path) = request.body {
            do {
                file = try await OffLoopFile.open(path)
            } catch {
                throw HTTPClientError.requestBodyFailed(reason: "\(error)")
            }
            try Task.checkCancellation()
        }
        var addresses =
            serverList == nil
            ? resolutions.knownAddresses(host: request.host, port: request.port)
            : serverList?.knownAddresses()
        if addresses == nil {
            addresses = try await self.addresses(for: request.origin)
            // Cancelled while the name was resolved: nothing is sent (past this point the cancellation handler
            // cancels the exchange).
            try Task.checkCancellation()
        }
        let start = try prepare(
            request, deadline: deadline, timeout: timeout, progress: progress, file: file,
            addresses: usable(addresses ?? []))
        // The cancellation handler's variant that runs on the caller's executor (the standard library's entry point for
        // callers compiled before `isolation:` was added): `withTaskCancellationHandler(operation:onCancel:isolation:)`
        // hops to its isolation on entry and back after the operation, two task switches that, for a task preferring
        // a loop, each read the task's executor preference under its status lock (issue 38: 540 instructions per
        // request).
        return try await _unsafeInheritExecutor_withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                start.begin(delivering: delivery(continuation))
            }
        } onCancel: {
            start.cancel()
        }
    }

    /// Takes `addresses` out of use (an active health check found them failing): new connections go to the other
    /// addresses of a request's origin, and idle connections to excluded ones are closed as the next request finds
    /// them left out. When every address of an origin is excluded, all of them are used (better a failing answer than
    /// none). Replaces the previous set; an empty one brings every address back.
    package func exclude(_ addresses: Set<SocketAddress>) {
        excluded.withLock { $0 = addresses }
        hasExclusions.store(!addresses.isEmpty, ordering: .relaxed)
    }

    /// The addresses requests to `origin` currently go to, before ``exclude(_:)`` applies: the configured
    /// ``Configuration/servers``' addresses, else those `origin`'s host resolves to (resolved now when not known).
    /// - Throws: ``HTTPClientError/nameResolutionFailed(host:)``.
    package func addresses(for origin: HTTPOrigin) async throws -> [SocketAddress] {
        if let serverList { return try await serverList.addresses() }
        do {
            return try await resolutions.addresses(host: origin.host, port: origin.port)
        } catch {
            throw HTTPClientError.nameResolutionFailed(host: origin.host)
        }
    }

    /// `addresses` without the excluded ones, unless that leaves none.
    func usable(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard hasExclusions.load(ordering: .relaxed) else { return addresses }
        let kept = excluded.withLock { excluded in addresses.filter { !excluded.contains($0) } }
        return kept.isEmpty ? addresses : kept
    }

    /// An exchange ready to go to its origin's pool on its loop.
    struct PreparedExchange: @unchecked Sendable {
        // Made before it is shared: the cancellation handler reaches it directly, with no box to allocate and lock.
        // Past `begin` only the loop touches it.
        let exchange: HTTPClientExchange
        let client: HTTPClient
        let loop: EventLoop
        let loopPools: LoopPools
        let tls: TLSContext?
        let addresses: [SocketAddress]

        /// Hands the exchange to the pool; called on the loop (a task preferring it) it starts at once, with no
        /// closure to allocate.
        func begin(delivering delivery: HTTPClientExchange.Delivery) {
            if loop.inEventLoop { submit(delivery) } else { loop.execute { submit(delivery) } }
        }

        /// Hands the exchange to its origin's pool, taking `delivery`; on the loop.
        func submit(_ delivery: consuming HTTPClientExchange.Delivery) {
            guard exchange.begin(delivering: delivery) else { return }
            let pool = HTTPClient.pool(
                for: exchange.request.origin, in: loopPools, loop: loop,
                configuration: client.configuration, tls: tls, budgets: client.budgets,
                shares: client.shareTables)
            pool.submit(exchange, addresses: addresses)
        }

        func cancel() {
            loop.execute { self.exchange.cancel() }
        }
    }

    /// The exchange for `request`: its head, body, loop and deadline (synchronous; see `run`).
    func prepare(
        _ request: consuming HTTPClientRequest, deadline: ContinuousClock.Instant?, timeout: Duration?,
        progress: HTTPClientProgress, file: OffLoopFile?, addresses: [SocketAddress], onLoop current: Int? = nil
    ) throws -> PreparedExchange {
        let body: [UInt8]
        let streamedBody: StreamedRequestBody?
        var upgradeBody: StreamedRequestBody?
        var tunnelIdleTimeout: Duration?
        switch request.body {
        case .none:
            body = []
            streamedBody = nil
        case .upgrade(let stream, let idleTimeout):
            // An upgrade has no HTTP/2 form: refused where the origin may speak it, before anything is sent.
            guard configuration.http2 == .never || (configuration.http2 == .auto && !request.origin.isTLS) else {
                throw HTTPClientError.upgradeRequiresHTTP1
            }
            body = []
            streamedBody = nil
            upgradeBody = .stream(stream, length: nil)
            tunnelIdleTimeout = idleTimeout
        case .bytes(let bytes):
            body = bytes
            streamedBody = nil
        case .file:
            body = []
            streamedBody = file.map { .file($0) }
        case .stream(let stream, let length):
            if let length, length < 0 { throw HTTPClientError.requestBodyFailed(reason: "negative length \(length)") }
            body = []
            streamedBody = .stream(stream, length: length)
        }
        guard !addresses.isEmpty else { throw HTTPClientError.nameResolutionFailed(host: request.host) }
        let tls = request.origin.isTLS ? try clientTLSContext() : nil
        let loopIndex: Int
        if let current = current ?? group.loops.firstIndex(where: { $0.inEventLoop }) {
            loopIndex = current
        } else {
            let next = group.next()
            loopIndex = group.loops.firstIndex { $0 === next } ?? 0
        }
        let loop = group.loops[loopIndex]
        // One reading of the loop's clock serves as the exchange's start and as the base of its deadline (the caller's
        // clock is read only for a deadline given as an instant).
        let now = EventLoop.now()
        var deadlineNanos = deadline.map { instant in
            now.addingSaturated(ContinuousClock.now.duration(to: instant).nanoseconds)
        }
        if let timeout {
            let bound = now.addingSaturated(timeout.nanoseconds)
            deadlineNanos = min(deadlineNanos ?? bound, bound)
        }
        let exchange = HTTPClientExchange(
            request: consume request, body: body, streamedBody: streamedBody, progress: progress,
            configuration: configuration, loop: loop, startedAt: now, deadline: deadlineNanos, client: self)
        exchange.upgradeBody = upgradeBody
        exchange.tunnelIdleTimeout = tunnelIdleTimeout
        return PreparedExchange(
            exchange: exchange, client: self, loop: loop, loopPools: pools[loopIndex].value, tls: tls,
            addresses: addresses)
    }

    private static func pool(
        for origin: HTTPOrigin, in pools: LoopPools, loop: EventLoop,
        configuration: Configuration, tls: TLSContext?, budgets: HTTPOriginBudgets,
        shares: HTTPOriginShareTables
    ) -> HTTPOriginPool {
        if let last = pools.last, last.origin == origin { return last }
        if let pool = pools.byOrigin[origin] {
            pools.last = pool
            return pool
        }
        let budget = budgets.budget(for: origin)
        let pool = HTTPOriginPool(
            origin: origin, loop: loop, configuration: configuration, tls: tls, budget: budget,
            shares: shares.table(for: origin))
        budget?.register(pool)
        pools.byOrigin[origin] = pool
        pools.last = pool
        if pools.sweepID == nil {
            pools.sweepID = loop.addTickHandler { now in
                for pool in pools.byOrigin.values { pool.sweep(now: now) }
            }
        }
        return pool
    }

    private func clientTLSContext() throws -> TLSContext {
        try tlsContext.withLock { cached in
            if let cached { return cached }
            do {
                var tls = configuration.tls
                switch configuration.http2 {
                case .auto: tls.alpnProtocols = ["h2", "http/1.1"]
                case .always: tls.alpnProtocols = ["h2"]
                case .never: tls.alpnProtocols = ["http/1.1"]
                }
                let context = try TLSContext(client: tls)
                cached = context
                return context
            } catch let error as TLSError {
                throw HTTPClientError.tlsFailed(reason: error.reason)
            }
        }
    }

    /// Closes every pooled connection and refuses new requests.
    package func shutdown() {
        isShutDown.store(true, ordering: .relaxed)
        for (index, loop) in group.loops.enumerated() {
            let loopPools = pools[index]
            loop.execute {
                for pool in loopPools.value.byOrigin.values { pool.closeAll() }
            }
        }
    }
}
