import Locking
import NetCore

/// Remembers what host names resolved to for a while, so a request to a named origin does not cost a `getaddrinfo`
/// (a hop to another thread) every time. Failures are not remembered; numeric hosts and `localhost` never reach the
/// resolver. Entries live `ttl`; an expired entry is resolved again by the next request that needs it.
final class HostResolutionCache: Sendable {
    typealias Resolver = @Sendable (_ host: String, _ port: Int) async throws -> [SocketAddress]

    private struct Key: Hashable {
        var host: String
        var port: Int
    }

    private struct Entry {
        var addresses: [SocketAddress]
        var expires: ContinuousClock.Instant
    }

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

    /// The addresses of `host:port` when they are known without the resolver: a numeric host, or a fresh cache entry.
    /// Synchronous, so the usual request costs no async call.
    func knownAddresses(host: String, port: Int) -> [SocketAddress]? {
        if let last = lastNumeric.withLock({ $0 }), last.key.host == host, last.key.port == port { return last.addresses }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let numeric = SocketAddress(numericHost: bare, port: port) {
            let addresses = [numeric]
            lastNumeric.withLock { $0 = (Key(host: host, port: port), addresses) }
            return addresses
        }
        guard ttl > .zero else { return nil }
        if let cached = entries.withLock({ $0[Key(host: host, port: port)] }), cached.expires > ContinuousClock.now {
            return cached.addresses
        }
        return nil
    }

    /// The addresses of `host:port`, from the cache while fresh, else from the resolver.
    func addresses(host: String, port: Int) async throws -> [SocketAddress] {
        if let known = knownAddresses(host: host, port: port) { return known }
        guard ttl > .zero else { return try await resolver(host, port) }
        let key = Key(host: host, port: port)
        let now = ContinuousClock.now
        let addresses = try await resolver(host, port)
        guard !addresses.isEmpty else { return addresses }
        entries.withLock { entries in
            if entries.count >= capacity { entries = entries.filter { $0.value.expires > now } }
            if entries.count < capacity { entries[key] = Entry(addresses: addresses, expires: now + ttl) }
        }
        return addresses
    }
}
