import Locking
import NetCore

/// Remembers what host names resolved to, so a request to a named origin does not cost a `getaddrinfo` (a hop to
/// another thread) every time, and a slow or failing name server delays no request but a name's first.
///
/// - A name is resolved once however many requests need it at the same time: the others wait for that resolution.
/// - Past `ttl` the name is resolved again in the background while requests go on to the last good addresses.
/// - A refresh that fails (or finds nothing) keeps the last good addresses and is tried again at most once per
///   ``failedRefreshRetry`` (or `ttl`, if shorter). A first resolution that fails is not remembered: the next request
///   tries again.
/// - Numeric hosts and `localhost` never reach the resolver; with a zero `ttl` every request resolves.
final class HostResolutionCache: Sendable {
    typealias Resolver = @Sendable (_ host: String, _ port: Int) async throws -> [SocketAddress]

    private struct Key: Hashable {
        var host: String
        var port: Int
    }

    private typealias Waiter = CheckedContinuation<Result<[SocketAddress], any Error>, Never>

    private struct Entry {
        /// The last good addresses (never empty); nil until the first resolution succeeds.
        var addresses: [SocketAddress]?
        var expires: ContinuousClock.Instant
        var resolving = false
        /// Requests waiting for the first resolution.
        var waiters: [Waiter] = []
    }

    /// How long after a failed refresh the last good addresses are used before the name is tried again.
    static let failedRefreshRetry: Duration = .seconds(5)

    private let ttl: Duration
    private let resolver: Resolver
    private let entries = Locked<[Key: Entry]>([:])
    /// The last numeric host asked for: a client talking to one numeric origin (a gateway's upstream) parses it once.
    private let lastNumeric = Locked<(key: Key, addresses: [SocketAddress])?>(nil)
    /// Bound on remembered names, so a client sent to many hosts does not grow without limit.
    private let capacity = 1024

    init(ttl: Duration, resolver: @escaping Resolver = { try await OffLoop.resolve(host: $0, port: $1) }) {
        self.ttl = ttl
        self.resolver = resolver
    }

    /// The addresses of `host:port` when they are known without waiting: a numeric host, or a name resolved before
    /// (an expired one starts a background refresh and is still returned). Synchronous, so the usual request costs no
    /// async call.
    func knownAddresses(host: String, port: Int) -> [SocketAddress]? {
        // Compared under the lock: only the addresses are copied out.
        let lastAddresses = lastNumeric.withLock { last -> [SocketAddress]? in
            guard let last, last.key.host == host, last.key.port == port else { return nil }
            return last.addresses
        }
        if let lastAddresses { return lastAddresses }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let numeric = SocketAddress(numericHost: bare, port: port) {
            let addresses = [numeric]
            lastNumeric.withLock { $0 = (Key(host: host, port: port), addresses) }
            return addresses
        }
        guard ttl > .zero else { return nil }
        let key = Key(host: host, port: port)
        let now = ContinuousClock.now
        let (addresses, refresh) = entries.withLock { entries -> ([SocketAddress]?, Bool) in
            guard var entry = entries[key], let addresses = entry.addresses else { return (nil, false) }
            guard entry.expires <= now, !entry.resolving else { return (addresses, false) }
            entry.resolving = true
            entries[key] = entry
            return (addresses, true)
        }
        if refresh { Task { await self.resolve(key) } }
        return addresses
    }

    /// How many requests wait for the resolution of `host:port` in progress (0 when none is).
    func waitingRequests(host: String, port: Int) -> Int {
        entries.withLock { $0[Key(host: host, port: port)]?.waiters.count ?? 0 }
    }

    /// The addresses of `host:port`: known ones at once, else from the resolution in progress or a new one.
    func addresses(host: String, port: Int) async throws -> [SocketAddress] {
        if let known = knownAddresses(host: host, port: port) { return known }
        guard ttl > .zero else { return try await resolver(host, port) }
        let key = Key(host: host, port: port)
        let result: Result<[SocketAddress], any Error> = await withCheckedContinuation { continuation in
            let starts = entries.withLock { entries -> Bool in
                if let addresses = entries[key]?.addresses {
                    continuation.resume(returning: .success(addresses))
                    return false
                }
                var entry = entries[key] ?? Entry(expires: .now)
                entry.waiters.append(continuation)
                let starts = !entry.resolving
                entry.resolving = true
                if entries[key] == nil { evictIfFull(&entries) }
                entries[key] = entry
                return starts
            }
            if starts { Task { await self.resolve(key) } }
        }
        return try result.get()
    }

    /// Resolves `key` and publishes the result to the cache and to the requests waiting for it.
    private func resolve(_ key: Key) async {
        let outcome: Result<[SocketAddress], any Error>
        do {
            let found = try await resolver(key.host, key.port)
            outcome = found.isEmpty ? .failure(HTTPClientError.nameResolutionFailed(host: key.host)) : .success(found)
        } catch {
            outcome = .failure(error)
        }
        let now = ContinuousClock.now
        let ttl = self.ttl
        let waiters = entries.withLock { entries -> [Waiter] in
            guard var entry = entries[key] else { return [] }
            let waiters = entry.waiters
            entry.waiters = []
            entry.resolving = false
            switch outcome {
            case .success(let addresses):
                entry.addresses = addresses
                entry.expires = now + ttl
            case .failure where entry.addresses != nil:
                entry.expires = now + min(ttl, Self.failedRefreshRetry)
            case .failure:
                entries[key] = nil
                return waiters
            }
            entries[key] = entry
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    /// Makes room for one more name: drops the expired entries nobody waits for, and when none has expired, one
    /// that is not being resolved.
    private func evictIfFull(_ entries: inout [Key: Entry]) {
        guard entries.count >= capacity else { return }
        let now = ContinuousClock.now
        entries = entries.filter { $0.value.resolving || $0.value.expires > now }
        if entries.count >= capacity, let idle = entries.first(where: { !$0.value.resolving })?.key {
            entries[idle] = nil
        }
    }
}
