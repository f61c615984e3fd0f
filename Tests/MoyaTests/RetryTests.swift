import Foundation
import HTTPClientCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct RetryPolicyTests {
    func request(_ method: String) -> URLRequest {
        var request = URLRequest(url: URL(string: "https://example.com")!)
        request.httpMethod = method
        return request
    }

    func status(_ code: Int, headers: [String: String] = [:]) -> Result<Response, MoyaError> {
        let http = HTTPURLResponse(
            url: URL(string: "https://example.com")!, statusCode: code, httpVersion: nil, headerFields: headers)
        return .success(Response(statusCode: code, data: Data(), response: http))
    }

    @Test func backoffIsExponentialAndCapped() {
        let policy = RetryPolicy(baseDelay: 0.1, multiplier: 2, maxDelay: 1)
        #expect(policy.backoff(attempt: 0) == 0.1)
        #expect(policy.backoff(attempt: 1) == 0.2)
        #expect(policy.backoff(attempt: 3) == 0.8)
        #expect(policy.backoff(attempt: 10) == 1)
    }

    @Test func retriesIdempotentOnRetryableStatus() {
        let policy = RetryPolicy(maxRetries: 2, jitter: false)
        #expect(policy.delay(for: request("GET"), result: status(503), attempt: 0) == 0.2)
        #expect(policy.delay(for: request("GET"), result: status(503), attempt: 1) == 0.4)
        #expect(policy.delay(for: request("GET"), result: status(503), attempt: 2) == nil)
        #expect(policy.delay(for: request("POST"), result: status(503), attempt: 0) == nil)
        #expect(policy.delay(for: request("GET"), result: status(404), attempt: 0) == nil)
        #expect(policy.delay(for: request("GET"), result: status(200), attempt: 0) == nil)
    }

    @Test func jitterStaysInRange() {
        let policy = RetryPolicy(baseDelay: 1, maxDelay: 1, jitter: true)
        for _ in 0..<50 {
            let delay = policy.delay(for: request("GET"), result: status(500), attempt: 0) ?? -1
            #expect(delay >= 0 && delay <= 1)
        }
    }

    @Test func retryAfterIsHonoured() {
        let policy = RetryPolicy(maxDelay: 10)
        #expect(policy.delay(for: request("GET"), result: status(429, headers: ["Retry-After": "3"]), attempt: 0) == 3)
    }

    @Test func connectionFailures() {
        let policy = RetryPolicy(jitter: false)
        let refused = Result<Response, MoyaError>.failure(
            .underlying(HTTPClientError.connectFailed(reason: "refused"), nil))
        #expect(policy.delay(for: request("GET"), result: refused, attempt: 0) != nil)
        let midResponse = Result<Response, MoyaError>.failure(
            .underlying(HTTPClientError.connectionClosed(responseStarted: true), nil))
        #expect(policy.delay(for: request("GET"), result: midResponse, attempt: 0) == nil)
        let noRetry = RetryPolicy(retriesConnectionFailures: false)
        #expect(noRetry.delay(for: request("GET"), result: refused, attempt: 0) == nil)
        let validation = Result<Response, MoyaError>.failure(
            .underlying(
                MoyaError.statusCode(Response(statusCode: 502, data: Data())), Response(statusCode: 502, data: Data())))
        #expect(policy.delay(for: request("GET"), result: validation, attempt: 0) != nil)
    }

    @Test func pluginDecision() async {
        let plugin = RetryPlugin(policy: RetryPolicy(jitter: false))
        if case .retry(let delay, nil) = await plugin.retry(
            request("GET"), for: GitHub.zen, dueTo: status(503), attempt: 0)
        {
            #expect(delay == 0.2)
        } else {
            Issue.record("expected retry")
        }
        if case .doNotRetry = await plugin.retry(request("GET"), for: GitHub.zen, dueTo: status(200), attempt: 0) {
        } else {
            Issue.record("expected no retry")
        }
    }
}

@Suite struct AccessTokenRefreshPluginTests {
    func unauthorized(_ request: URLRequest) -> Result<Response, MoyaError> {
        .success(Response(statusCode: 401, data: Data(), request: request))
    }

    @Test func prepareAddsCurrentToken() {
        let plugin = AccessTokenRefreshPlugin(token: "t0") { "t1" }
        let prepared = plugin.prepare(URLRequest(url: URL(string: "https://a")!), target: GitHub.zen)
        #expect(prepared.value(forHTTPHeaderField: "Authorization") == "Bearer t0")
        #expect(
            plugin.prepare(URLRequest(url: URL(string: "https://a")!), target: TestTarget(authorizationType: nil))
                .value(forHTTPHeaderField: "Authorization") == nil)
        #expect(
            plugin.prepare(
                URLRequest(url: URL(string: "https://a")!), target: TestTarget(authorizationType: .custom("Token"))
            )
            .value(forHTTPHeaderField: "Authorization") == "Token t0")
    }

    @Test func concurrent401sShareOneRefresh() async {
        let calls = Recorder<Int>()
        let plugin = AccessTokenRefreshPlugin(token: "old") {
            calls.append(1)
            try await AsyncTask.sleep(nanoseconds: 100_000_000)
            return "new"
        }
        let request = plugin.prepare(URLRequest(url: URL(string: "https://a")!), target: GitHub.zen)
        let headers = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    let decision = await plugin.retry(
                        request, for: GitHub.zen, dueTo: self.unauthorized(request), attempt: 0)
                    if case .retry(_, let newRequest?) = decision {
                        return newRequest.value(forHTTPHeaderField: "Authorization")
                    }
                    return nil
                }
            }
            var all: [String?] = []
            for await header in group { all.append(header) }
            return all
        }
        #expect(headers == Array(repeating: "Bearer new", count: 10))
        #expect(calls.count == 1)
        #expect(await plugin.token == "new")
        // A late 401 for a request sent with the old token uses the new one without refreshing again.
        let late = await plugin.retry(request, for: GitHub.zen, dueTo: unauthorized(request), attempt: 0)
        if case .retry(_, let newRequest?) = late {
            #expect(newRequest.value(forHTTPHeaderField: "Authorization") == "Bearer new")
        }
        #expect(calls.count == 1)
    }

    @Test func noRetryAfterFirstAttemptOrOnSuccess() async {
        let plugin = AccessTokenRefreshPlugin(token: "a") { "b" }
        let request = URLRequest(url: URL(string: "https://a")!)
        if case .retry = await plugin.retry(request, for: GitHub.zen, dueTo: unauthorized(request), attempt: 1) {
            Issue.record("should not retry")
        }
        if case .retry = await plugin.retry(
            request, for: GitHub.zen, dueTo: .success(Response(statusCode: 200, data: Data())), attempt: 0)
        {
            Issue.record("should not retry")
        }
        #expect(await plugin.refreshCount == 0)
    }

    @Test func failedRefreshFailsWithItsError() async {
        struct Boom: Error {}
        let plugin = AccessTokenRefreshPlugin(token: "a") { throw Boom() }
        let request = plugin.prepare(URLRequest(url: URL(string: "https://a")!), target: GitHub.zen)
        let decision = await plugin.retry(request, for: GitHub.zen, dueTo: unauthorized(request), attempt: 0)
        guard case .doNotRetryWithError(let error) = decision else {
            Issue.record("expected the refresh error, got \(decision)")
            return
        }
        #expect(error is Boom)
    }
}

@Suite struct AuthenticationChallengeTests {
    func challenge(_ header: String) -> Result<Response, MoyaError> {
        let http = HTTPURLResponse(
            url: URL(string: "https://example.com/dir/index.html")!, statusCode: 401, httpVersion: nil,
            headerFields: ["WWW-Authenticate": header])
        return .success(Response(statusCode: 401, data: Data(), response: http))
    }

    @Test func md5Vectors() {
        #expect(MD5.hex("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex("abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(MD5.hex("The quick brown fox jumps over the lazy dog") == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(MD5.hex(String(repeating: "a", count: 1000)) == "cabe45dcc9ae5b66ba86600cca6b8ba8")
    }

    @Test func basicChallenge() {
        let credential = URLCredential(user: "user", password: "pass", persistence: .none)
        #expect(
            AuthenticationChallenge.authorization(
                answering: challenge(#"Basic realm="x""#), method: "GET", uri: "/", credential: credential)
                == "Basic dXNlcjpwYXNz")
        #expect(
            AuthenticationChallenge.authorization(
                answering: challenge("Bearer"), method: "GET", uri: "/", credential: credential) == nil)
        #expect(
            AuthenticationChallenge.authorization(
                answering: .success(Response(statusCode: 200, data: Data())), method: "GET", uri: "/",
                credential: credential) == nil)
    }

    @Test func digestRFC2617Example() {
        // RFC 2617 §3.5: Mufasa / Circle Of Life.
        var request = URLRequest(url: URL(string: "http://www.nowhere.org/dir/index.html")!)
        request.httpMethod = "GET"
        let outgoing = URLRequestOutgoing(request: request, plan: TransferPlan())
        #expect(outgoing.digestMethod == "GET" && outgoing.digestURI == "/dir/index.html")
        let params = AuthenticationChallenge.parseChallenges(
            #"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#
        )
        #expect(params.first?.scheme == "digest")
        let header = AuthenticationChallenge.digestAuthorization(
            challenge: params[0].parameters, user: "Mufasa", password: "Circle Of Life",
            method: outgoing.digestMethod, uri: outgoing.digestURI,
            cnonce: "0a4f113b")
        #expect(header?.contains(#"response="6629fae49393a05397450978507c4ef1""#) == true)
        #expect(header?.contains(#"uri="/dir/index.html""#) == true)
        #expect(header?.contains(#"opaque="5ccc069c403ebaf9f0171e9517f40e41""#) == true)
        #expect(header?.hasPrefix("Digest ") == true)
    }
}
