@testable import HTTPClient
import Locking
import NetCore
import Testing

/// The client's host-name cache: a name is resolved once per TTL, failures and numeric hosts are never cached.
@Suite struct HostResolutionCacheTests {
    final class CountingResolver: Sendable {
        let calls = Locked(0)
        let failing = Locked(false)
        var count: Int { calls.withLock { $0 } }

        func resolve(_ host: String, _ port: Int) throws -> [SocketAddress] {
            calls.withLock { $0 += 1 }
            if failing.withLock({ $0 }) { throw HTTPClientError.nameResolutionFailed(host: host) }
            return [SocketAddress(numericHost: "127.0.0.1", port: port)!]
        }
    }

    @Test func aNameIsResolvedOncePerTTL() async throws {
        let resolver = CountingResolver()
        let cache = HostResolutionCache(ttl: .milliseconds(200)) { try resolver.resolve($0, $1) }
        for _ in 0..<10 { _ = try await cache.addresses(host: "upstream.internal", port: 80) }
        #expect(resolver.count == 1)
        _ = try await cache.addresses(host: "upstream.internal", port: 81)
        #expect(resolver.count == 2, "the port is part of the key")
        try await Task.sleep(for: .milliseconds(300))
        let again = try await cache.addresses(host: "upstream.internal", port: 80)
        #expect(resolver.count == 3, "resolved again once expired")
        #expect(again == [SocketAddress(numericHost: "127.0.0.1", port: 80)!])
    }

    @Test func failuresAndNumericHostsAreNotCached() async throws {
        let resolver = CountingResolver()
        let cache = HostResolutionCache(ttl: .seconds(30)) { try resolver.resolve($0, $1) }
        resolver.failing.withLock { $0 = true }
        await #expect(throws: HTTPClientError.self) { try await cache.addresses(host: "flaky.internal", port: 80) }
        resolver.failing.withLock { $0 = false }
        _ = try await cache.addresses(host: "flaky.internal", port: 80)
        #expect(resolver.count == 2, "a failure is retried on the next request")
        _ = try await cache.addresses(host: "10.1.2.3", port: 80)
        _ = try await cache.addresses(host: "[::1]", port: 80)
        #expect(resolver.count == 2, "numeric hosts never reach the resolver")
    }

    @Test func aZeroTTLResolvesEveryTime() async throws {
        let resolver = CountingResolver()
        let cache = HostResolutionCache(ttl: .zero) { try resolver.resolve($0, $1) }
        for _ in 0..<3 { _ = try await cache.addresses(host: "upstream.internal", port: 80) }
        #expect(resolver.count == 3)
    }
}
