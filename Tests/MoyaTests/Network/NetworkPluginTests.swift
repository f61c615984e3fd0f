import Foundation
import HTTPClientCore
import HTTPWire
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Records every `retry` question and the decision of the retrier it wraps.
struct CountingRetrier: RequestRetrier {
    let inner: RequestRetrier
    let attempts: Recorder<(attempt: Int, retried: Bool)>

    func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>, attempt: Int
    ) async -> RetryDecision {
        let decision = await inner.retry(request, for: target, dueTo: result, attempt: attempt)
        if case .retry = decision { attempts.append((attempt, true)) } else { attempts.append((attempt, false)) }
        return decision
    }
}

/// Plugins against the loopback httpbin.
@Suite struct NetworkPluginTests {

    // MARK: - AccessTokenPlugin

    @Test func accessTokenReachesTheServer() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [AccessTokenPlugin { _ in "t0k3n" }])
            var bearer = BinTarget(bin, "/headers")
            bearer.authorizationType = .bearer
            #expect(try await provider.request(bearer).echo().headers["authorization"] == "Bearer t0k3n")

            var custom = BinTarget(bin, "/anything/custom")
            custom.authorizationType = .custom("Token")
            #expect(try await provider.request(custom).echo().headers["authorization"] == "Token t0k3n")

            var basic = BinTarget(bin, "/anything/basic")
            basic.authorizationType = .basic
            #expect(try await provider.request(basic).echo().headers["authorization"] == "Basic t0k3n")

            #expect(try await provider.request(BinTarget(bin, "/anything/none")).echo().headers["authorization"] == nil)

            let multi = MoyaProvider<MultiTarget>(
                session: Session(client: HTTPClient(), headers: [:]),
                plugins: [AccessTokenPlugin { _ in "multi" }])
            let echo = try await multi.request(MultiTarget(bearer)).echo()
            #expect(echo.headers["authorization"] == "Bearer multi")
        }
    }

    // MARK: - CredentialsPlugin

    @Test func credentialsAnswerABasicChallengeWithOneRetry() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [
                CredentialsPlugin { _ in URLCredential(user: "user", password: "pa:ss", persistence: .none) }
            ])
            let response = try await provider.response(
                BinTarget(bin, "/basic-auth/user/pa:ss", validationType: .successCodes))
            #expect(response.statusCode == 200)
            #expect(try response.map(String.self, atKeyPath: "user") == "user")
            #expect(bin.hits("/basic-auth/user/pa:ss") == 2, "a 401 challenge, then the answer")
            #expect(
                bin.lastHeaders("/basic-auth/user/pa:ss")?.first(name: "Authorization") == "Basic "
                    + Data("user:pa:ss".utf8).base64EncodedString())
            #expect(response.request?.value(forHTTPHeaderField: "Authorization")?.hasPrefix("Basic ") == true)

            // Wrong credentials: one answer only, then the 401 is the result.
            let wrong = await provider.request(BinTarget(bin, "/basic-auth/user/other", validationType: .successCodes))
            #expect(wrong.httpResponse?.statusCode == 401)
            #expect(bin.hits("/basic-auth/user/other") == 2)

            // Without the plugin the challenge is simply the response.
            let plain = binProvider()
            #expect(try await plain.response(BinTarget(bin, "/basic-auth/a/b")).statusCode == 401)
            #expect(bin.hits("/basic-auth/a/b") == 1)
        }
    }

    @Test func preemptiveCredentialsSkipTheChallenge() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [
                CredentialsPlugin(preemptive: true) { _ in URLCredential(user: "u", password: "p", persistence: .none) }
            ])
            #expect(try await provider.response(BinTarget(bin, "/basic-auth/u/p")).statusCode == 200)
            #expect(bin.hits("/basic-auth/u/p") == 1)
        }
    }

    @Test func credentialsAnswerADigestChallenge() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [
                CredentialsPlugin { _ in URLCredential(user: "dig", password: "secret", persistence: .none) }
            ])
            let target = "/digest-auth/dig/secret?q=1"
            let response = try await provider.response(
                BinTarget(
                    bin, "/digest-auth/dig/secret",
                    task: .requestParameters(parameters: ["q": 1], encoding: URLEncoding.queryString)))
            #expect(response.statusCode == 200)
            #expect(bin.hits(target) == 2)
            let authorization = bin.lastHeaders(target)?.first(name: "Authorization") ?? ""
            #expect(
                authorization.hasPrefix(
                    "Digest username=\"dig\", realm=\"x\", nonce=\"\(Httpbin.digestNonce)\", uri=\"\(target)\", qop=auth, nc=00000001"
                ))
            #expect(authorization.contains("opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""))

            let wrong = binProvider(plugins: [
                CredentialsPlugin { _ in URLCredential(user: "dig", password: "nope", persistence: .none) }
            ])
            #expect(try await wrong.response(BinTarget(bin, "/digest-auth/dig/other")).statusCode == 401)
            #expect(bin.hits("/digest-auth/dig/other") == 2)
        }
    }

    // MARK: - RetryPlugin

    @Test func retriesARefusedConnectionThenFails() async throws {
        let port = try await closedPort()
        let attempts = Recorder<(attempt: Int, retried: Bool)>()
        let retrier = CountingRetrier(
            inner: RetryPlugin(policy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false)), attempts: attempts)
        let results = Recorder<String>()
        let provider = MoyaProvider<TestTarget>(
            session: Session(client: HTTPClient(), headers: [:]),
            plugins: [retrier, RecordingPlugin(tag: "r", log: results)])
        let target = TestTarget(baseURL: URL(string: "http://127.0.0.1:\(port)")!, path: "/get")
        let result = await provider.request(target)
        guard case .failure(.underlying(let error, nil)) = result else {
            Issue.record("expected a connection failure, got \(result)")
            return
        }
        guard case HTTPClientError.connectFailed = error else {
            Issue.record("expected connectFailed, got \(error)")
            return
        }
        // Readable, not Foundation's "The operation could not be completed. (HTTPClientCore.HTTPClientError error 2.)".
        #expect(result.failureDescription?.hasPrefix("connect failed") == true, "\(result.failureDescription ?? "")")
        #expect(attempts.values.map(\.attempt) == [0, 1, 2], "three sends: the first and two retries")
        #expect(attempts.values.map(\.retried) == [true, true, false])
        #expect(
            results.values == ["prepare:r", "willSend:r", "didReceive:r", "process:r"],
            "plugins see one request and one result")

        // A POST is not idempotent: no retry.
        let postAttempts = Recorder<(attempt: Int, retried: Bool)>()
        let postProvider = MoyaProvider<TestTarget>(
            session: Session(client: HTTPClient(), headers: [:]),
            plugins: [
                CountingRetrier(
                    inner: RetryPlugin(policy: RetryPolicy(baseDelay: 0.01, jitter: false)), attempts: postAttempts)
            ])
        _ = await postProvider.request(
            TestTarget(baseURL: URL(string: "http://127.0.0.1:\(port)")!, path: "/post", method: .post))
        #expect(postAttempts.values.map(\.retried) == [false])
    }

    @Test func retriesA503() async throws {
        try await withHttpbin { bin async throws in
            let policy = RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false)
            let provider = binProvider(plugins: [RetryPlugin(policy: policy)])

            // Two 503s, then a 200.
            let recovered = try await provider.response(BinTarget(bin, "/flaky/a/2", validationType: .successCodes))
            #expect(recovered.statusCode == 200)
            #expect(try recovered.map(Int.self, atKeyPath: "attempt") == 3)
            #expect(bin.hits("/flaky/a/2") == 3)

            // Always 503: the last 503 is the result after 1 + maxRetries sends.
            let failed = await provider.request(BinTarget(bin, "/status/503", validationType: .successCodes))
            guard case .failure(.underlying(MoyaError.statusCode(let response), _)) = failed else {
                Issue.record("expected a statusCode failure, got \(failed)")
                return
            }
            #expect(response.statusCode == 503)
            #expect(bin.hits("/status/503") == 3)

            // Without validation a 503 is a success that is retried just the same.
            #expect(try await provider.response(BinTarget(bin, "/flaky/b/1")).statusCode == 200)
            #expect(bin.hits("/flaky/b/1") == 2)

            // POST is not retried.
            #expect(try await provider.response(BinTarget(bin, "/flaky/c/1", method: .post)).statusCode == 503)
            #expect(bin.hits("/flaky/c/1") == 1)
        }
    }

    @Test func cancellingDuringARetryDelayEndsPromptly() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [
                RetryPlugin(policy: RetryPolicy(maxRetries: 3, baseDelay: 20, maxDelay: 20, jitter: false))
            ])
            let task = _Concurrency.Task { await provider.request(BinTarget(bin, "/status/503")) }
            #expect(await waitUntil { bin.hits("/status/503") == 1 })
            try await _Concurrency.Task.sleep(for: .milliseconds(50))
            let cancelledAt = ContinuousClock.now
            task.cancel()
            let result = await task.value
            #expect(ContinuousClock.now - cancelledAt < .seconds(8), "well before the 20 s retry delay ends")
            guard case .failure(let error) = result else {
                Issue.record("expected a cancellation, got \(result)")
                return
            }
            #expect(error.isCancellation)
            #expect(bin.hits("/status/503") == 1)
        }
    }

    // MARK: - NetworkLoggerPlugin

    static func logger(_ lines: Recorder<String>, options: NetworkLoggerPlugin.Configuration.LogOptions)
        -> NetworkLoggerPlugin
    {
        let formatter = NetworkLoggerPlugin.Configuration.Formatter(entry: { identifier, message, _ in
            "\(identifier): \(message)"
        })
        return NetworkLoggerPlugin(
            configuration: .init(
                formatter: formatter, output: { _, items in items.forEach(lines.append) },
                logOptions: options,
                redactedHeaders: NetworkLoggerPlugin.Configuration.sensitiveHeaders))
    }

    /// The response line with the object address (which changes) replaced by `0xADDR`.
    static func normalized(_ line: String) -> String {
        line.replacingOccurrences(of: #"0x[0-9a-f]+>"#, with: "0xADDR>", options: .regularExpression)
    }

    @Test func loggerPrintsExactLinesWithRedaction() async throws {
        try await withHttpbin { bin async throws in
            let lines = Recorder<String>()
            let provider = binProvider(plugins: [
                AccessTokenPlugin { _ in "secret-token" }, Self.logger(lines, options: .verbose)
            ])
            var target = BinTarget(bin, "/fixed", method: .post, task: .requestData(Data("hello".utf8)))
            target.authorizationType = .bearer
            let response = try await provider.response(target)
            #expect(response.statusCode == 200)
            #expect(
                bin.lastHeaders("/fixed")?.first(name: "Authorization") == "Bearer secret-token",
                "the server gets the real token")

            let base = "http://127.0.0.1:\(bin.port)"
            let logged = lines.values.map(Self.normalized)
            #expect(logged.count == 6, "\(logged)")
            guard logged.count == 6 else { return }
            #expect(logged[0] == "Request: \(base)/fixed")
            // Dictionary description: the order of the two entries is not fixed.
            #expect(
                logged[1] == #"Request Headers: ["Authorization": "[REDACTED]", "X-Session": "s"]"#
                    || logged[1] == #"Request Headers: ["X-Session": "s", "Authorization": "[REDACTED]"]"#,
                "\(logged[1])")
            #expect(logged[2] == "Request Body: hello")
            #expect(logged[3] == "HTTP Request Method: POST")
            #expect(
                logged[4] == """
                    Response: <NSHTTPURLResponse: 0xADDR> { URL: \(base)/fixed } { Status Code: 200, Headers {
                        "Content-Length" = 2;
                        "Content-Type" = text/plain;
                        "Date" = Mon, 01 Jan 2024 00:00:00 GMT;
                        "Set-Cookie" = [REDACTED];
                    } }
                    """)
            #expect(logged[5] == "Response Body: ok")
            #expect(!lines.values.joined().contains("secret-token"))
            #expect(!lines.values.joined().contains("session=secret"))
        }
    }

    @Test func loggerCURLAndErrorLines() async throws {
        try await withHttpbin { bin async throws in
            let lines = Recorder<String>()
            let provider = binProvider(plugins: [
                AccessTokenPlugin { _ in "secret-token" },
                Self.logger(lines, options: [.formatRequestAscURL, .errorResponseBody])
            ])
            var target = BinTarget(bin, "/status/500", validationType: .successCodes)
            target.authorizationType = .bearer
            _ = await provider.request(target)
            let base = "http://127.0.0.1:\(bin.port)"
            let logged = lines.values.map(Self.normalized)
            #expect(logged.count == 3, "\(logged)")
            guard logged.count == 3 else { return }
            #expect(
                logged[0]
                    == "Request: $ curl -v \\\n\t-X GET \\\n\t-H \"X-Session: s\" \\\n\t-H \"Authorization: [REDACTED]\" \\\n\t\"\(base)/status/500\""
            )
            #expect(
                logged[1].hasPrefix(
                    "Response: <NSHTTPURLResponse: 0xADDR> { URL: \(base)/status/500 } { Status Code: 500, Headers {\n    \"Content-Length\" = 0;\n    \"Date\" = "
                ))
            #expect(logged[2] == "Response Body: ")

            // A connection failure is an Error line.
            let port = try await closedPort()
            var refused = BinTarget(bin, "/get")
            refused.baseURL = URL(string: "http://127.0.0.1:\(port)")!
            _ = await provider.request(refused)
            let errorLine = try #require(lines.values.last)
            #expect(errorLine.hasPrefix("Error: Error calling BinTarget("), "\(errorLine)")
            #expect(errorLine.contains("connect failed"), "\(errorLine)")
        }
    }
}
