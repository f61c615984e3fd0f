import Locking
import NetCore

/// The addresses of a client's configured servers (``HTTPClient/Configuration/servers``), in the order listed, each
/// once. A list of numeric addresses is parsed once. Names are resolved together, the first time a request needs
/// them; past ``HTTPClient/Configuration/nameResolutionTTL`` they are resolved again in the background while requests
/// go on to the last good addresses, so a slow or failing name server delays no request but the first. A name that
/// does not resolve is left out of that round's list; a round where none resolves keeps the previous list.
final class ServerListResolution: Sendable {
    private struct State {
        /// The last list with at least one address.
        var addresses: [SocketAddress]?
        var expires: ContinuousClock.Instant = .now
        var resolving = false
        /// Requests that wait for the first list.
        var waiters: [CheckedContinuation<[SocketAddress]?, Never>] = []
    }

    private let servers: [HTTPClient.Configuration.Server]
    /// The whole list when every server is numeric (or `localhost`): nothing to resolve.
    private let fixed: [SocketAddress]?
    private let ttl: Duration
    private let resolver: HostResolutionCache.Resolver
    private let state = Locked(State())

    init(servers: [HTTPClient.Configuration.Server], ttl: Duration, resolver: @escaping HostResolutionCache.Resolver) {
        self.servers = servers
        self.ttl = ttl
        self.resolver = resolver
        let numeric = servers.map { Self.numericAddress(of: $0) }
        fixed = numeric.contains { $0 == nil } ? nil : Self.distinct([numeric.compactMap { $0 }])
    }

    /// The names, for an error that none of them resolved.
    var names: String { servers.map(\.description).joined(separator: ", ") }

    /// The addresses when known without waiting: fixed, or resolved before (an expired list starts a refresh and is
    /// still returned). Synchronous, so the usual request costs no async call.
    func knownAddresses() -> [SocketAddress]? {
        if let fixed { return fixed }
        let now = ContinuousClock.now
        let (addresses, refresh) = state.withLock { state -> ([SocketAddress]?, Bool) in
            guard let addresses = state.addresses else { return (nil, false) }
            guard state.expires <= now, !state.resolving else { return (addresses, false) }
            state.resolving = true
            return (addresses, true)
        }
        if refresh { Task { await self.resolveAll() } }
        return addresses
    }

    /// The addresses, waiting for the first resolution when there is none yet.
    /// - Throws: ``HTTPClientError/nameResolutionFailed(host:)`` when no server's name resolved.
    func addresses() async throws -> [SocketAddress] {
        if let known = knownAddresses() { return known }
        let resolved: [SocketAddress]? = await withCheckedContinuation { continuation in
            let starts = state.withLock { state -> Bool in
                if let addresses = state.addresses {
                    continuation.resume(returning: addresses)
                    return false
                }
                state.waiters.append(continuation)
                guard !state.resolving else { return false }
                state.resolving = true
                return true
            }
            if starts { Task { await self.resolveAll() } }
        }
        guard let resolved else { throw HTTPClientError.nameResolutionFailed(host: names) }
        return resolved
    }

    /// Resolves every server at once and publishes the list (or keeps the previous one when none resolved).
    private func resolveAll() async {
        let resolver = self.resolver
        let lists = await withTaskGroup(of: (Int, [SocketAddress]).self) { group in
            for (index, server) in servers.enumerated() {
                group.addTask {
                    if let numeric = Self.numericAddress(of: server) { return (index, [numeric]) }
                    return (index, (try? await resolver(server.host, server.port)) ?? [])
                }
            }
            var lists = [[SocketAddress]](repeating: [], count: servers.count)
            for await (index, list) in group { lists[index] = list }
            return lists
        }
        let fresh = Self.distinct(lists)
        let now = ContinuousClock.now
        let (waiters, addresses) = state.withLock { state in
            if !fresh.isEmpty { state.addresses = fresh }
            // Nothing ever resolved: the next request tries again at once.
            state.expires = state.addresses == nil ? now : now + ttl
            state.resolving = false
            let waiters = state.waiters
            state.waiters = []
            return (waiters, state.addresses)
        }
        for waiter in waiters { waiter.resume(returning: addresses) }
    }

    private static func numericAddress(of server: HTTPClient.Configuration.Server) -> SocketAddress? {
        let host = server.host == "localhost" ? "127.0.0.1" : server.host
        return SocketAddress(numericHost: host, port: server.port)
    }

    /// The addresses of `lists` in order, each once.
    private static func distinct(_ lists: [[SocketAddress]]) -> [SocketAddress] {
        var result: [SocketAddress] = []
        for address in lists.joined() where !result.contains(address) { result.append(address) }
        return result
    }
}
