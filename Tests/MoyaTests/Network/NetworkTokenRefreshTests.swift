import Foundation
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `AccessTokenRefreshPlugin` against httpbin's `/bearer`, which answers 401 until the request carries the token
/// the server currently accepts.
@Suite struct NetworkTokenRefreshTests {
    static let concurrency = 8

    /// `/bearer` as a target that asks for a Bearer token.
    static func bearer(_ bin: Httpbin, validationType: ValidationType = .none) -> BinTarget {
        var target = BinTarget(bin, "/bearer", validationType: validationType)
        target.authorizationType = .bearer
        return target
    }

    /// Sends `concurrency` identical `/bearer` requests at once and returns their results.
    static func sendConcurrently(_ provider: MoyaProvider<BinTarget>, _ bin: Httpbin) async -> [Result<
        Moya.Response, MoyaError
    >] {
        await withTaskGroup(of: Result<Moya.Response, MoyaError>.self) { group in
            for _ in 0..<concurrency {
                group.addTask { await provider.request(Self.bearer(bin, validationType: .successCodes)) }
            }
            var results: [Result<Moya.Response, MoyaError>] = []
            for await result in group { results.append(result) }
            return results
        }
    }

    @Test func concurrent401sShareOneRefreshAndAllSucceed() async throws {
        try await withHttpbin { bin async throws in
            bin.validToken = "fresh"
            let n = Self.concurrency
            // The refresh waits until every request has been answered 401 with the stale token, so all of them
            // are waiting for the same refresh.
            let plugin = AccessTokenRefreshPlugin(token: "stale") {
                _ = await waitUntil { bin.hits("/bearer") >= n }
                return "fresh"
            }
            let provider = binProvider(plugins: [plugin])
            let results = await Self.sendConcurrently(provider, bin)
            #expect(results.count == n)
            for result in results {
                #expect(try result.get().map(String.self, atKeyPath: "token") == "fresh")
            }
            #expect(await plugin.refreshCount == 1, "one refresh for \(n) concurrent 401s")
            #expect(bin.hits("/bearer") == 2 * n, "each request: one 401, one retry with the new token")
            #expect(bin.lastHeaders("/bearer")?.first(name: "Authorization") == "Bearer fresh")

            // Later requests carry the new token from the start.
            #expect(try await provider.response(Self.bearer(bin)).statusCode == 200)
            #expect(bin.hits("/bearer") == 2 * n + 1)
            #expect(await plugin.refreshCount == 1)

            // The server rotates the token: one more refresh, and the request succeeds.
            bin.validToken = "fresher"
            let rotating = AccessTokenRefreshPlugin(token: "fresh") { "fresher" }
            let rotated = binProvider(plugins: [rotating])
            #expect(try await rotated.response(Self.bearer(bin)).map(String.self, atKeyPath: "token") == "fresher")
            #expect(await rotating.refreshCount == 1)
        }
    }

    @Test func failedRefreshFailsEveryWaitingRequestWithItsError() async throws {
        struct RefreshFailed: Error, Equatable {}
        try await withHttpbin { bin async throws in
            let n = Self.concurrency
            let plugin = AccessTokenRefreshPlugin(token: "stale") {
                _ = await waitUntil { bin.hits("/bearer") >= n }
                // Let every 401 reach the plugin before the refresh ends.
                try? await _Concurrency.Task.sleep(for: .milliseconds(300))
                throw RefreshFailed()
            }
            let provider = binProvider(plugins: [plugin])
            let results = await Self.sendConcurrently(provider, bin)
            #expect(results.count == n)
            for result in results {
                guard case .failure(.underlying(let error, let response)) = result else {
                    Issue.record("expected the refresh error, got \(result)")
                    continue
                }
                #expect(error as? RefreshFailed == RefreshFailed())
                #expect(response?.statusCode == 401, "the 401 that asked for the refresh")
            }
            #expect(await plugin.refreshCount == 1)
            #expect(bin.hits("/bearer") == n, "nothing is sent again")
            #expect(await plugin.token == "stale")
        }
    }

    @Test func aServerThatKeepsAnswering401IsNotLoopedOn() async throws {
        try await withHttpbin { bin async throws in
            bin.validToken = "never-issued"
            let plugin = AccessTokenRefreshPlugin(token: "a") { "b" }
            let provider = binProvider(plugins: [plugin])
            let response = try await provider.response(Self.bearer(bin))
            #expect(response.statusCode == 401)
            #expect(bin.hits("/bearer") == 2, "the first send and one retry with the refreshed token")
            #expect(await plugin.refreshCount == 1)
        }
    }
}
