import HTTPWire
import NetCore

/// The connections of one client to one origin on one loop: idle connections reused last-in first-out, a cap on open
/// connections and a bounded queue of waiting exchanges, each failed once it has waited past
/// ``HTTPClient/Configuration/maxWaitTime`` or its deadline (checked by the loop's 250 ms sweep). Loop thread only.
///
/// HTTP/2: once the origin is known to speak it (mode `.always`, or ALPN picked `h2`), every exchange goes to one
/// ``HTTP2ClientConnection``. With `.auto` on TLS the first connection is a probe: it opens as HTTP/1.1 with ALPN
/// `h2,http/1.1`, other exchanges wait for its handshake, then they all go to HTTP/2 or HTTP/1.1 connections.
final class HTTPOriginPool {
    /// What the pool knows about the origin's protocol.
    enum OriginProtocol {
        /// Not known yet (TLS with `.auto`): the next connection probes by ALPN.
        case unknown
        /// A probing connection is handshaking; exchanges wait.
        case probing
        case http1
        case http2
    }

    let origin: HTTPOrigin
    let loop: EventLoop
    let configuration: HTTPClient.Configuration
    let tls: TLSContext?
    /// The client-wide cap on this origin's HTTP/1.1 connections across loops, if any.
    let budget: HTTPOriginBudget?
    /// Who holds how many connections, for the fair share of a full pool (nil without one).
    private let shares: HTTPOriginShares?
    /// The `Host` field line (`Host: host[:port]` and CRLF) an HTTP/1.1 request without its own `Host` is sent with,
    /// written and checked once for the origin rather than for every request; nil when the origin's host is no valid
    /// field value (each request's head then fails to serialize, as it would without this).
    let hostField: [UInt8]?
    // Loop-confined state skips dynamic exclusivity checks (see `Connection`): no access to it can overlap another.
    // The collections' in-place mutations call nothing that reaches the pool (closing a connection, which calls back
    // into it, happens after the connection is taken out; an exchange failed in the wait queue resumes its caller
    // later, as a task; the fair share's callbacks read other objects).
    @exclusivity(unchecked) var idle: [HTTP1ClientConnection] = []
    @exclusivity(unchecked) var all: [ObjectIdentifier: HTTP1ClientConnection] = [:]
    @exclusivity(unchecked) private var waiting = HTTPClientWaitQueue()
    @exclusivity(unchecked) var addresses: [SocketAddress] = []
    /// Which of `addresses` the next new connection goes to: they take turns (see ``nextAddress()``).
    @exclusivity(unchecked) private var addressIndex = 0
    /// Until when (loop clock) each address whose connection could not be made is passed over.
    @exclusivity(unchecked) private var failedUntil: [SocketAddress: UInt64] = [:]
    @exclusivity(unchecked) var learned: OriginProtocol
    /// The HTTP/2 connections new exchanges go to: one per address (with one address, at most one).
    @exclusivity(unchecked) var http2Active: [HTTP2ClientConnection] = []
    /// Every open HTTP/2 connection, including those finishing their streams after GOAWAY.
    @exclusivity(unchecked) var http2Connections: [ObjectIdentifier: HTTP2ClientConnection] = [:]
    /// Set by `closeAll` (client shutdown): exchanges moved off a closing connection fail instead of reconnecting.
    @exclusivity(unchecked) private var isClosed = false
    /// The fair share's holder of the last caller a connection was given to: the same caller's next request (a
    /// proxy's usual run) is counted without looking its caller up.
    @exclusivity(unchecked) private var lastHolder: HTTPOriginShares.Holder?

    init(
        origin: HTTPOrigin, loop: EventLoop, configuration: HTTPClient.Configuration, tls: TLSContext?,
        budget: HTTPOriginBudget? = nil, shares: HTTPOriginShares? = nil
    ) {
        self.origin = origin
        self.loop = loop
        self.configuration = configuration
        self.tls = tls
        self.budget = budget
        self.shares = shares
        var hostField: [UInt8] = []
        do {
            try HTTP1Serializer.writeField(name: "Host", value: origin.hostHeader, into: &hostField)
            self.hostField = hostField
        } catch {
            self.hostField = nil
        }
        switch configuration.http2 {
        case .never: learned = .http1
        case .always: learned = .http2
        case .auto: learned = origin.isTLS ? .unknown : .http1
        }
    }

    var openConnections: Int { all.count + http2Connections.count }

    /// Runs `exchange` on an idle connection, a new one, or after a connection frees up.
    func submit(_ exchange: HTTPClientExchange, addresses: [SocketAddress]) {
        guard !isClosed else {
            exchange.fail(.shutDown)
            return
        }
        if !addresses.isEmpty && addresses != self.addresses { adopt(addresses) }
        if !http2Active.isEmpty {
            guard self.addresses.count > 1 else {
                http2Active[0].enqueue(exchange)
                return
            }
            // Several addresses: each request takes the next in turn, on its connection or a new one.
            let address = nextAddress()
            if let connection = http2Active.first(where: { $0.connection.remoteAddress == address }) {
                connection.enqueue(exchange)
            } else if learned == .http2 {
                openHTTP2(for: exchange, to: address)
            } else {
                http2Active[0].enqueue(exchange)
            }
            return
        }
        switch learned {
        case .http2:
            openHTTP2(for: exchange)
            return
        case .unknown:
            learned = .probing
            open(for: exchange)
            return
        case .probing:
            enqueueWaiting(exchange)
            return
        case .http1:
            break
        }
        // With several addresses each request takes the next one in turn, on an idle connection to it or a new one
        // (nginx's round robin); with one, the most recently idle connection.
        let address = self.addresses.count > 1 ? nextAddress() : nil
        let full = all.count >= configuration.maxConnectionsPerOrigin
        if !exchange.requiresFreshConnection, let connection = takeIdle(to: address, orAny: full) {
            assign(exchange, to: connection)
            return
        }
        if !full {
            open(for: exchange, to: address)
            return
        }
        enqueueWaiting(exchange)
    }

    /// A fresh resolution: the turn goes on from where it was, and addresses no longer listed (an instance gone from
    /// a name, or from the servers) get no more requests: their failures are forgotten, their idle connections
    /// closed and their HTTP/2 connections take no new streams (those in flight finish).
    private func adopt(_ addresses: [SocketAddress]) {
        let previous = self.addresses
        self.addresses = addresses
        addressIndex %= addresses.count
        guard !previous.isEmpty else { return }
        failedUntil = failedUntil.filter { addresses.contains($0.key) }
        let unlisted = { (connection: Connection) in
            connection.remoteAddress.map { !addresses.contains($0) } ?? false
        }
        // Closed after they left the list: closing calls back into the pool.
        let gone = idle.filter { unlisted($0.connection) }
        idle.removeAll { unlisted($0.connection) }
        for connection in gone { connection.connection.close() }
        for connection in http2Active where unlisted(connection.connection) { http2ConnectionRetired(connection) }
    }

    /// An idle connection that may be reused: the most recently idle one, or with `address` the most recently idle
    /// one to that address (to another only when `orAny`). Closed ones, and ones idle past the client's limit or about
    /// to be closed by the server (its `Keep-Alive: timeout=`: not worth the race), are dropped on the way.
    private func takeIdle(to address: SocketAddress?, orAny: Bool) -> HTTP1ClientConnection? {
        var index = idle.count - 1
        var other: Int?
        let now = loop.roundTime
        while index >= 0 {
            let connection = idle[index]
            if connection.connection.isClosed || !connection.mayBeReused(now: now) {
                idle.remove(at: index)
                if !connection.connection.isClosed { connection.connection.close() }
                // `other`, when set, lies above `index` and moved down with the removal.
                other = other.map { $0 - 1 }
                index -= 1
                continue
            }
            if address == nil || connection.connection.remoteAddress == address { return idle.remove(at: index) }
            if other == nil { other = index }
            index -= 1
        }
        guard orAny, let other else { return nil }
        return idle.remove(at: other)
    }

    /// Submits an exchange that is already on this pool's loop again (moved off an HTTP/2 connection).
    func resubmit(_ exchange: HTTPClientExchange) {
        guard !exchange.isFinished else { return }
        submit(exchange, addresses: [])
    }

    /// Puts back, first in line and with its wait time running on, a waiter that could not get a connection after all.
    private func requeueFirst(_ exchange: HTTPClientExchange) {
        waiting.prepend(exchange)
    }

    private func enqueueWaiting(_ exchange: HTTPClientExchange) {
        waiting.enqueue(exchange, limit: configuration.maxWaitingRequestsPerOrigin)
    }

    /// Opens an HTTP/1.1 connection for `exchange` (to `chosen`, else to the next address in turn), or keeps it
    /// waiting when the client-wide budget has no place (the exchange keeps its place and its wait time when it was
    /// waiting already).
    private func open(for exchange: HTTPClientExchange, wasWaiting: Bool = false, to chosen: SocketAddress? = nil) {
        guard !addresses.isEmpty else {
            exchange.fail(.nameResolutionFailed(host: origin.host))
            return
        }
        if let budget, !budget.acquire(for: self) {
            if wasWaiting { requeueFirst(exchange) } else { enqueueWaiting(exchange) }
            return
        }
        let address = chosen ?? nextAddress()
        var opened: HTTP1ClientConnection?
        do {
            let connection = try Connection(connectingTo: address, loop: loop, tls: tls, serverName: origin.host)
            let client = HTTP1ClientConnection(
                connection: connection, pool: self,
                limits: HTTP1ResponseParser.Limits(
                    maxHeaderBytes: configuration.maxResponseHeaderBytes,
                    maxHeaders: configuration.maxResponseHeaders,
                    maxBodyBytes: configuration.maxResponseBodyBytes),
                connectTimeout: min(configuration.connectTimeout, remaining(exchange)),
                idleTimeout: configuration.idleTimeout)
            connection.delegate = client
            all[ObjectIdentifier(client)] = client
            opened = client
            assign(exchange, to: client)
            try connection.start()
        } catch {
            // Not registered with the loop (or never made): no close callback will come, so undo it all here.
            if let opened {
                all.removeValue(forKey: ObjectIdentifier(opened))
                releaseShare(of: opened)
                opened.connection.close()
            }
            budget?.release()
            exchange.fail(.connectFailed(reason: "\(error)"))
        }
    }

    /// The address for a new connection (`addresses` must not be empty): the next in turn, so that connections, and
    /// the requests on them, spread over all of a name's addresses as nginx spreads them over an upstream's servers;
    /// an address whose connection failed lately is passed over while another one is left.
    func nextAddress() -> SocketAddress {
        let count = addresses.count
        if !failedUntil.isEmpty {
            let now = loop.roundTime
            for step in 0..<count {
                let index = (addressIndex + step) % count
                let address = addresses[index]
                if let until = failedUntil[address] {
                    if until > now { continue }
                    failedUntil[address] = nil
                }
                addressIndex = (index + 1) % count
                return address
            }
        }
        let address = addresses[addressIndex % count]
        addressIndex = (addressIndex + 1) % count
        return address
    }

    /// The probing connection's handshake picked HTTP/1.1: open connections for the exchanges that waited.
    func learnedHTTP1() {
        guard learned == .probing else { return }
        learned = .http1
        openForWaiters()
    }

    /// Opens connections for waiting exchanges while the loop's cap and the client-wide budget allow.
    private func openForWaiters() {
        while all.count < configuration.maxConnectionsPerOrigin, let next = nextWaiter() {
            let before = all.count
            open(for: next, wasWaiting: true)
            if all.count == before && !next.isFinished { return }  // no place in the budget: it waits again
        }
    }

    /// The budget has a place again (another connection to the origin closed): waiting exchanges may get one.
    func budgetFreed() {
        guard !isClosed, learned == .http1 else { return }
        openForWaiters()
    }

    /// Another loop's pool waits for a place in the budget: an idle connection here gives its place up.
    func giveUpIdleConnection() {
        while let connection = idle.popLast() {
            if connection.connection.isClosed { continue }
            connection.connection.close()
            return
        }
    }

    func remaining(_ exchange: HTTPClientExchange) -> Duration {
        guard let deadline = exchange.deadline else { return .seconds(3600) }
        let now = EventLoop.now()
        return deadline > now ? .nanoseconds(Int64(clamping: deadline - now)) : .zero
    }

    /// The next waiter: the first, or with the fair share (see ``HTTPOriginShares``) the first whose caller holds less
    /// than its share of the origin's connections, taken out of the queue wherever it is, else the first.
    func nextWaiter() -> HTTPClientExchange? {
        // Looked at before it is changed: reading is an instantaneous access, no exclusivity bookkeeping.
        if waiting.isEmpty { return nil }
        guard let shares else { return waiting.popFirst() }
        return waiting.popFirst(
            fairShare: shares.limit, held: { shares.held }, onFairShareWait: configuration.onFairShareWait)
    }

    /// Gives `exchange` to `connection`, counting the connection for the exchange's caller (fair share).
    private func assign(_ exchange: HTTPClientExchange, to connection: HTTP1ClientConnection) {
        if let shares, let caller = exchange.callerKey {
            releaseShare(of: connection)
            let holder = shares.take(caller, cached: lastHolder)
            lastHolder = holder
            connection.shareHolder = holder
        }
        connection.start(exchange)
    }

    /// `connection` no longer counts for the caller it was given to.
    func releaseShare(of connection: HTTP1ClientConnection) {
        guard let holder = connection.shareHolder else { return }
        connection.shareHolder = nil
        shares?.give(holder)
    }

    /// A connection finished an exchange and can take another.
    func release(_ connection: HTTP1ClientConnection) {
        releaseShare(of: connection)
        if let next = nextWaiter() {
            assign(next, to: connection)
        } else if budget?.hasHungryPools == true {
            // Another loop waits for a place in the client-wide budget: this connection's place goes to it.
            connection.connection.close()
        } else {
            idle.append(connection)
        }
    }

    /// A connection closed; its unfinished exchange is retried once on a fresh connection when that is safe (idempotent,
    /// the connection had been reused, no response byte arrived, and the body can be sent again: not a stream that was
    /// already pulled from), else failed. A connection that could not be made (refused, unreachable, timed out) sent
    /// nothing: when the name resolved to more addresses, the exchange goes to another one, whatever its method, and
    /// new connections pass the failed address over for ``HTTPClient/Configuration/failedAddressPause``.
    func connectionClosed(
        _ connection: HTTP1ClientConnection, failing exchange: HTTPClientExchange?,
        with error: HTTPClientError, reused: Bool
    ) {
        if all.removeValue(forKey: ObjectIdentifier(connection)) != nil { budget?.release() }
        releaseShare(of: connection)
        idle.removeAll { $0 === connection }
        if learned == .probing && !connection.isActive {
            // The probe failed: the next connection probes again.
            learned = .unknown
        }
        if let exchange, !exchange.isFinished {
            if !connection.isActive, failsOver(exchange, from: connection.connection.remoteAddress, after: error) {
                submit(exchange, addresses: [])
            } else if reused, !exchange.retried, !exchange.responseStarted, exchange.request.method.isIdempotent,
                exchange.canResend, case .connectionClosed = error
            {
                exchange.retried = true
                exchange.requiresFreshConnection = true
                open(for: exchange)
            } else {
                exchange.fail(error)
            }
        }
        // Unless another probe is still handshaking, the next waiter gets a connection (a new probe when unknown).
        guard learned != .probing, all.count < configuration.maxConnectionsPerOrigin, let next = nextWaiter() else {
            return
        }
        if learned == .unknown { learned = .probing }
        open(for: next, wasWaiting: true)
    }

    /// Whether `exchange`, which a connection to `address` never sent because connecting failed with `error` (refused,
    /// unreachable or timed out), goes on to another of the name's addresses; new connections pass `address` over for
    /// a while (see ``nextAddress()``). Not when every address has failed it already, nor once its deadline has passed.
    func failsOver(_ exchange: HTTPClientExchange, from address: SocketAddress?, after error: HTTPClientError)
        -> Bool
    {
        switch error {
        case .connectFailed, .connectTimeout: break
        default: return false
        }
        guard addresses.count > 1 else { return false }
        if let address {
            failedUntil[address] = loop.roundTime.addingSaturated(configuration.failedAddressPause.nanoseconds)
        }
        guard exchange.failedAddresses + 1 < addresses.count, remaining(exchange) > .zero else { return false }
        exchange.failedAddresses += 1
        return true
    }

    /// The loop's sweep: closes connections idle too long and fails exchanges that waited too long for one.
    func sweep(now: UInt64) {
        expireWaiting(now: now)
        for connection in idle { connection.expireIfIdle(now: now) }
        for connection in Array(http2Connections.values) {
            connection.expireWaiting(now: now)
            connection.expireIfIdle(now: now, timeout: configuration.idleTimeout)
        }
    }

    /// Fails the waiting exchanges whose wait expired (see ``HTTPClientExchange/expireWait(now:)``) and drops them
    /// from the queue.
    private func expireWaiting(now: UInt64) {
        waiting.expireWaits(now: now)
    }

    func closeAll() {
        isClosed = true
        for connection in Array(all.values) { connection.connection.close() }
        for connection in Array(http2Connections.values) { connection.connection.close() }
    }
}
