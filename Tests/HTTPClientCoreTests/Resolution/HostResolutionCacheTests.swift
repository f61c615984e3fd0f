import Locking
import NetCore
import Testing

@testable import HTTPClientCore

/// The client's host-name cache: a name is resolved once per TTL however many ask, refreshed in the background while
/// its last good addresses are served, kept when a refresh fails; first failures and numeric hosts are never cached.
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
        #expect(again == [SocketAddress(numericHost: "127.0.0.1", port: 80)!], "the last good answer meanwhile")
        try await Self.waitUntil { resolver.count == 3 }
        #expect(resolver.count == 3, "resolved again once expired, in the background")
        _ = try await cache.addresses(host: "upstream.internal", port: 80)
        #expect(resolver.count == 3, "and fresh again after that")
    }

    /// A resolver that answers only when let through, and says what it answers.
    final class GatedResolver: Sendable {
        let calls = Locked(0)
        let answer = Locked<[SocketAddress]?>([SocketAddress(numericHost: "127.0.0.1", port: 80)!])
        private let gate = Locked<[CheckedContinuation<Void, Never>]>([])
        private let open = Locked(false)
        var count: Int { calls.withLock { $0 } }
        var waiting: Int { gate.withLock { $0.count } }

        func resolve(_ host: String, _ port: Int) async throws -> [SocketAddress] {
            calls.withLock { $0 += 1 }
            await withCheckedContinuation { continuation in
                let wait = open.withLock { !$0 }
                if wait { gate.withLock { $0.append(continuation) } } else { continuation.resume() }
            }
            guard let addresses = answer.withLock({ $0 }) else {
                throw HTTPClientError.nameResolutionFailed(host: host)
            }
            return addresses
        }

        /// Lets every waiting resolution through; `stayOpen` lets later ones through at once.
        func release(stayOpen: Bool = false) {
            open.withLock { $0 = stayOpen }
            for waiter in gate.withLock({ gate in
                defer { gate = [] }
                return gate
            }) { waiter.resume() }
        }
    }

    @Test func concurrentFirstRequestsShareOneResolution() async throws {
        let resolver = GatedResolver()
        let cache = HostResolutionCache(ttl: .seconds(30)) { try await resolver.resolve($0, $1) }
        try await withThrowingTaskGroup(of: [SocketAddress].self) { group in
            for _ in 0..<50 { group.addTask { try await cache.addresses(host: "upstream.internal", port: 80) } }
            try await Self.waitUntil { resolver.waiting == 1 }
            resolver.release(stayOpen: true)
            var answers = 0
            for try await addresses in group {
                #expect(addresses == [SocketAddress(numericHost: "127.0.0.1", port: 80)!])
                answers += 1
            }
            #expect(answers == 50)
        }
        #expect(resolver.count == 1, "fifty concurrent requests, one getaddrinfo")
    }

    @Test func anExpiredNameIsServedWhileItsRefreshIsSlowAndKeptWhenTheRefreshFails() async throws {
        let resolver = GatedResolver()
        let cache = HostResolutionCache(ttl: .milliseconds(100)) { try await resolver.resolve($0, $1) }
        let first = Task { try await cache.addresses(host: "upstream.internal", port: 80) }
        try await Self.waitUntil { resolver.waiting == 1 }
        resolver.release()
        let good = try await first.value
        try await Task.sleep(for: .milliseconds(150))
        // The name server hangs: requests go on to the last good addresses, and only one refresh is asked for.
        for _ in 0..<20 { #expect(cache.knownAddresses(host: "upstream.internal", port: 80) == good) }
        try await Self.waitUntil { resolver.waiting == 1 }
        #expect(resolver.count == 2)
        // It then fails: the last good addresses stay, and the name is tried again once the retry interval (here
        // the TTL) has passed.
        resolver.answer.withLock { $0 = nil }
        resolver.release(stayOpen: true)
        var seen: [[SocketAddress]?] = []
        try await Self.waitUntil {
            seen.append(cache.knownAddresses(host: "upstream.internal", port: 80))
            return resolver.count == 3
        }
        #expect(resolver.count == 3)
        #expect(seen.allSatisfy { $0 == good }, "the last good addresses throughout")
        #expect(try await cache.addresses(host: "upstream.internal", port: 80) == good)
        // The name comes back with a new address: a later refresh publishes it.
        let moved = [SocketAddress(numericHost: "127.0.0.2", port: 80)!]
        resolver.answer.withLock { $0 = moved }
        try await Self.waitUntil { cache.knownAddresses(host: "upstream.internal", port: 80) == moved }
        #expect(cache.knownAddresses(host: "upstream.internal", port: 80) == moved)
    }

    @Test func aFirstResolutionThatFailsReachesEveryWaiterAndIsNotRemembered() async throws {
        let resolver = GatedResolver()
        resolver.answer.withLock { $0 = nil }
        let cache = HostResolutionCache(ttl: .seconds(30)) { try await resolver.resolve($0, $1) }
        let waiters = (0..<5).map { _ in Task { try await cache.addresses(host: "down.internal", port: 80) } }
        // Every waiter joins the one resolution before it fails (a task started late would start a second one).
        try await Self.waitUntil {
            resolver.waiting == 1 && cache.waitingRequests(host: "down.internal", port: 80) == waiters.count
        }
        resolver.release(stayOpen: true)
        for waiter in waiters { await #expect(throws: HTTPClientError.self) { try await waiter.value } }
        #expect(resolver.count == 1)
        resolver.answer.withLock { $0 = [SocketAddress(numericHost: "127.0.0.1", port: 80)!] }
        _ = try await cache.addresses(host: "down.internal", port: 80)
        #expect(resolver.count == 2, "the failure was not cached")
    }

    /// Polls `condition` every 5 ms for up to 5 s.
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
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
