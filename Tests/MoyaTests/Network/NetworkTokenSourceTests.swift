import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `OAuth2ClientCredentialsTokenSource` and `AccessTokenSourcePlugin` against a real loopback token endpoint and API
/// (our `HTTPServer`, in-process): one fetch for any number of concurrent requests, proactive renewal, one retry after
/// a `401`, bounded retries and recovery when the endpoint fails, a wait bounded by the deadline.
@Suite struct NetworkTokenSourceTests {
    static let clientID = "reports client"
    static let secret = "s3cr:t/+é&="

    static func configuration(
        _ server: TokenServer, lifetime: Duration = .seconds(300), renewBefore: Duration = .seconds(60),
        authentication: OAuth2ClientCredentialsTokenSource.ClientAuthentication = .basic,
        attempts: Int = 3, failurePause: Duration = .milliseconds(300)
    )
        -> OAuth2ClientCredentialsTokenSource.Configuration
    {
        OAuth2ClientCredentialsTokenSource.Configuration(
            tokenURL: "http://127.0.0.1:\(server.port)/oauth/token", clientID: clientID, clientSecret: secret,
            scope: "reports.read reports.write", audience: "https://api.example", clientAuthentication: authentication,
            timeout: .seconds(5), defaultLifetime: lifetime,
            renewal: AccessTokenRenewalPolicy(
                renewBefore: renewBefore, attempts: attempts, backoff: .milliseconds(50),
                failurePause: failurePause, maxFailurePause: failurePause))
    }

    static func provider(_ source: any AccessTokenSource) -> MoyaProvider<APITarget> {
        MoyaProvider<APITarget>(
            session: Session(client: HTTPClient(), headers: [:]),
            plugins: [AccessTokenSourcePlugin(source: source)])
    }

    @Test func concurrentRequestsWaitForOneFetchAndTheGrantIsWellFormed() async throws {
        try await withTokenServer { server in
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server), client: HTTPClient())
            server.delay = .milliseconds(200)
            let provider = Self.provider(source)
            let results = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask { (try? await provider.request(APITarget(server)).get().statusCode) ?? -1 }
                }
                var statuses: [Int] = []
                for await status in group { statuses.append(status) }
                return statuses
            }
            #expect(results == Array(repeating: 200, count: 50))
            #expect(server.fetches == 1, "one fetch for 50 requests that all waited for a first token")
            #expect(source.fetchCount == 1)
            // RFC 6749 §2.3.1 and §4.4.2: Basic with the form-encoded id and secret, the grant in the form body.
            let expected = "Basic " + Data("reports+client:s3cr%3At%2F%2B%C3%A9%26%3D".utf8).base64EncodedString()
            #expect(server.lastAuthorization == expected)
            #expect(
                server.lastForm == [
                    "grant_type": "client_credentials", "scope": "reports.read reports.write",
                    "audience": "https://api.example"
                ])
            #expect(server.lastContentType == "application/x-www-form-urlencoded")
        }
    }

    @Test func postAuthenticationSendsTheCredentialsInTheForm() async throws {
        try await withTokenServer { server in
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server, authentication: .post), client: HTTPClient())
            #expect(try await Self.provider(source).request(APITarget(server)).get().statusCode == 200)
            #expect(server.lastAuthorization == nil)
            #expect(server.lastForm["client_id"] == Self.clientID && server.lastForm["client_secret"] == Self.secret)
        }
    }

    @Test func aTokenNearItsExpiryIsRenewedInTheBackground() async throws {
        try await withTokenServer { server in
            server.expiresIn = 4
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server, renewBefore: .seconds(2)), client: HTTPClient())
            let provider = Self.provider(source)
            let first = try await provider.request(APITarget(server)).get().map(String.self, atKeyPath: "token")
            #expect(first == "tok-1")
            try await _Concurrency.Task.sleep(for: .milliseconds(2300))
            // Within two seconds of its expiry: the request goes on with the current token and starts the renewal.
            server.delay = .milliseconds(300)
            let during = try await provider.request(APITarget(server)).get().map(String.self, atKeyPath: "token")
            #expect(during == "tok-1", "the request did not wait for the renewal")
            #expect(await waitUntil { server.fetches == 2 })
            // The renewal's answer arrives 300 ms after its request.
            try await _Concurrency.Task.sleep(for: .milliseconds(500))
            #expect(source.hasValidToken)
            let after = try await provider.request(APITarget(server)).get().map(String.self, atKeyPath: "token")
            #expect(after == "tok-2")
            #expect(server.fetches == 2)
        }
    }

    @Test func aRefusedTokenIsReplacedAndTheRequestSentOnceMore() async throws {
        try await withTokenServer { server in
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server), client: HTTPClient())
            let provider = Self.provider(source)
            #expect(try await provider.request(APITarget(server)).get().statusCode == 200)
            server.revokeAll()
            let apiCalls = server.apiCalls
            // Concurrent requests refused with the same token: one renewal for all of them. The API answers after
            // 200 ms, so that all eight are sent with the revoked token before the first refusal comes back.
            server.apiDelay = .milliseconds(200)
            let tokens = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try? await provider.request(APITarget(server)).get().map(String.self, atKeyPath: "token")
                    }
                }
                var tokens: [String?] = []
                for await token in group { tokens.append(token) }
                return tokens
            }
            #expect(tokens == Array(repeating: "tok-2", count: 8))
            #expect(server.fetches == 2)
            #expect(server.apiCalls - apiCalls == 16, "each request: one 401, one retry with the new token")
            server.apiDelay = .zero

            // An API that refuses every token is tried twice per request, never looped on.
            server.refusesEverything = true
            let before = server.apiCalls
            #expect(try await provider.request(APITarget(server)).get().statusCode == 401)
            #expect(server.apiCalls - before == 2)
            #expect(server.fetches == 3)
        }
    }

    @Test func theTransportLaneWaitsForTheTokenAndRetriesA401() async throws {
        try await withTokenServer { server in
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server), client: HTTPClient())
            let provider = MoyaProvider<APITarget>(
                endpointClosure: MoyaProvider<APITarget>.defaultEndpointMapping,
                requestClosure: MoyaProvider<APITarget>.defaultRequestMapping,
                stubClosure: MoyaProvider<APITarget>.neverStub,
                session: Session(client: HTTPClient(), headers: [:], redirectHandler: .doNotFollow),
                plugins: [AccessTokenSourcePlugin(source: source)], trackInflights: false,
                transportMapping: { $0.transportRequest() })
            #expect(provider.transportLane != nil, "the plugin has transport forms")
            let response = try await provider.requestInCurrentTask(APITarget(server)).get()
            #expect(try response.map(String.self, atKeyPath: "token") == "tok-1")
            #expect(response.request?.value(forHTTPHeaderField: "Authorization") == "Bearer tok-1")
            server.revokeAll()
            let retried = try await provider.requestInCurrentTask(APITarget(server)).get()
            #expect(try retried.map(String.self, atKeyPath: "token") == "tok-2")
            #expect(server.fetches == 2)
        }
    }

    @Test func aFailingEndpointIsRetriedBoundedlyThenRecoveredFrom() async throws {
        try await withTokenServer { server in
            server.failWith = 503
            let events = Recorder<String>()
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server), client: HTTPClient()
            ) {
                event in
                switch event {
                case .fetched: events.append("fetched")
                case .fetchFailed(let reason, let retry): events.append("failed: \(reason)\(retry ? " (retry)" : "")")
                case .invalidated: events.append("invalidated")
                }
            }
            let provider = Self.provider(source)
            let result = await provider.request(APITarget(server))
            guard case .failure(.underlying(let error as AccessTokenSourceError, nil)) = result else {
                Issue.record("expected the source's error, got \(result)")
                return
            }
            #expect(error.reason == "token endpoint answered 503 (temporarily_unavailable)")
            #expect(server.fetches == 3, "three attempts in the round")
            #expect(server.apiCalls == 0, "nothing was sent without a token")
            #expect(
                events.values == [
                    "failed: token endpoint answered 503 (temporarily_unavailable) (retry)",
                    "failed: token endpoint answered 503 (temporarily_unavailable) (retry)",
                    "failed: token endpoint answered 503 (temporarily_unavailable)"
                ])
            // During the pause after the failed round: failed at once, no new round.
            let paused = await provider.request(APITarget(server))
            if case .failure(.underlying(let error as AccessTokenSourceError, _)) = paused {
                #expect(error.reason.hasPrefix("token endpoint answered 503"))
            } else {
                Issue.record("expected the last round's error, got \(paused)")
            }
            #expect(server.fetches == 3)

            server.failWith = nil
            try await _Concurrency.Task.sleep(for: .milliseconds(400))
            #expect(try await provider.request(APITarget(server)).get().statusCode == 200)
            #expect(server.fetches == 4)
            #expect(events.values.last == "fetched")
            for value in events.values { #expect(!value.contains(Self.secret) && !value.contains("tok-")) }
        }
    }

    @Test func answersThatAreNotGrantsFailWithAReasonThatQuotesNothing() async throws {
        try await withTokenServer { server in
            let cases: [(TokenServer.Answer, String, Int)] = [
                (.garbage, "the token endpoint's answer is not a JSON object", 3),
                (.noToken, "the token endpoint's answer has no access_token", 3),
                (.badLifetime, "the token endpoint's answer has an expires_in that is not a positive number", 3),
                (.macToken, "the token endpoint's answer has a token_type other than Bearer", 1),
                (.invalidClient, "token endpoint answered 401 (invalid_client)", 1),
                (.headerBreaking, "the token is empty or has characters a header cannot carry", 3)
            ]
            for (answer, reason, attempts) in cases {
                server.answer = answer
                let before = server.fetches
                let source = try OAuth2ClientCredentialsTokenSource(
                    configuration: Self.configuration(server), client: HTTPClient())
                do {
                    _ = try await source.token(before: nil)
                    Issue.record("\(answer): expected a failure")
                } catch let error as AccessTokenSourceError {
                    #expect(error.reason == reason, "\(answer)")
                    #expect(!error.reason.contains("SECRET-IN-ANSWER"))
                }
                #expect(server.fetches - before == attempts, "\(answer): transient failures only are retried")
            }
        }
    }

    @Test func aWaitEndsAtTheDeadlineWhileTheFetchGoesOn() async throws {
        try await withTokenServer { server in
            server.delay = .milliseconds(800)
            let source = try OAuth2ClientCredentialsTokenSource(
                configuration: Self.configuration(server), client: HTTPClient())
            do {
                _ = try await source.token(before: .now + .milliseconds(100))
                Issue.record("expected the deadline to pass first")
            } catch let error as AccessTokenSourceError {
                #expect(error.reason.contains("deadline"))
            }
            // The fetch went on: a later caller gets its token without another fetch.
            #expect(try await source.token(before: .now + .seconds(5)) == "tok-1")
            #expect(server.fetches == 1)

            // A cancelled waiter leaves; the fetch it started still serves the next one.
            source.invalidate("tok-1")
            let waiting = _Concurrency.Task { try await source.token(before: nil) }
            try await _Concurrency.Task.sleep(for: .milliseconds(100))
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(try await source.token(before: nil) == "tok-2")
            #expect(server.fetches == 2)
        }
    }

    @Test func aRenewingSourceRunsAnyFetchClosureOnceForConcurrentCallers() async throws {
        let calls = Recorder<Int>()
        let source = RenewingAccessTokenSource { () async throws -> AccessTokenGrant in
            calls.append(1)
            try await _Concurrency.Task.sleep(for: .milliseconds(100))
            return AccessTokenGrant(token: "t\(calls.count)", lifetime: nil)
        }
        let tokens = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<20 { group.addTask { try? await source.token(before: nil) } }
            var tokens: [String?] = []
            for await token in group { tokens.append(token) }
            return tokens
        }
        #expect(tokens == Array(repeating: "t1", count: 20))
        #expect(calls.count == 1)
        source.invalidate("not-the-token")
        #expect(try await source.token(before: nil) == "t1", "an old token's invalidation is ignored")
        source.invalidate("t1")
        #expect(try await source.token(before: nil) == "t2")
        #expect(String(describing: AccessTokenGrant(token: "t1", lifetime: nil)).contains("REDACTED"))
        #expect(!String(describing: Self.configurationDescription).contains(Self.secret))
    }

    static let configurationDescription = OAuth2ClientCredentialsTokenSource.Configuration(
        tokenURL: "https://auth.example/token", clientID: "id", clientSecret: secret)
}

/// A target on the token server's API (`/api`).
struct APITarget: TargetType {
    var baseURL: URL
    var path: String { "/api" }
    var method: Moya.Method { .get }
    var task: Moya.Task { .requestPlain }
    var headers: [String: String]? { nil }

    init(_ server: TokenServer) { baseURL = URL(string: "http://127.0.0.1:\(server.port)")! }
}

func withTokenServer<T>(_ body: (TokenServer) async throws -> T) async throws -> T {
    let server = try await TokenServer.start()
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

/// A token endpoint (`POST /oauth/token`, client credentials, issuing `tok-1`, `tok-2`, ...) and an API (`GET /api`,
/// answering `{"token": ...}` to a valid, unrevoked, unexpired Bearer token and `401` otherwise) on one loopback
/// server.
final class TokenServer: HTTPServerHandler, @unchecked Sendable {
    enum Answer { case grant, garbage, noToken, badLifetime, macToken, invalidClient, headerBreaking }

    private let lock = NSLock()
    private var issued: [String: ContinuousClock.Instant] = [:]
    private var counters = (fetches: 0, api: 0)
    private var last: (authorization: String?, form: [String: String], contentType: String?) = (nil, [:], nil)
    private var settings: (delay: Duration, expiresIn: Int, failWith: Int?, refuses: Bool, answer: Answer) =
        (.zero, 300, nil, false, .grant)
    private var apiWait: Duration = .zero
    private var server: HTTPServer?
    private(set) var port = 0

    static func start() async throws -> TokenServer {
        let handler = TokenServer()
        let server = HTTPServer(
            configuration: .init(listen: [SocketAddress(numericHost: "127.0.0.1", port: 0)!]),
            group: try EventLoopGroup(threads: 1), handler: handler)
        try await server.start()
        handler.server = server
        handler.port = server.localAddresses[0].port
        return handler
    }

    func shutdown() async { await server?.shutdown(timeout: .seconds(1)) }

    var fetches: Int { lock.withLock { counters.fetches } }
    var apiCalls: Int { lock.withLock { counters.api } }
    var lastAuthorization: String? { lock.withLock { last.authorization } }
    var lastForm: [String: String] { lock.withLock { last.form } }
    var lastContentType: String? { lock.withLock { last.contentType } }
    var delay: Duration {
        get { lock.withLock { settings.delay } }
        set { lock.withLock { settings.delay = newValue } }
    }
    var expiresIn: Int {
        get { lock.withLock { settings.expiresIn } }
        set { lock.withLock { settings.expiresIn = newValue } }
    }
    var failWith: Int? {
        get { lock.withLock { settings.failWith } }
        set { lock.withLock { settings.failWith = newValue } }
    }
    var answer: Answer {
        get { lock.withLock { settings.answer } }
        set { lock.withLock { settings.answer = newValue } }
    }
    /// How long `/api` waits before it answers.
    var apiDelay: Duration {
        get { lock.withLock { apiWait } }
        set { lock.withLock { apiWait = newValue } }
    }
    var refusesEverything: Bool {
        get { lock.withLock { settings.refuses } }
        set { lock.withLock { settings.refuses = newValue } }
    }

    func revokeAll() { lock.withLock { issued.removeAll() } }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let body = (try? await request.body.collect(upTo: 1 << 16)) ?? []
        if request.head.path == "/oauth/token" { return await token(request, body: body) }
        let wait = apiDelay
        if wait > .zero { try? await _Concurrency.Task.sleep(for: wait) }
        let (valid, refuses): (Bool, Bool) = lock.withLock {
            counters.api += 1
            let authorization = request.head.headers.first(name: "Authorization") ?? ""
            let token = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
            return (issued[token].map { ContinuousClock.now < $0 } ?? false, settings.refuses)
        }
        guard valid && !refuses else {
            return HTTPServerResponse(status: 401, headers: ["WWW-Authenticate": "Bearer"], body: [])
        }
        let token = String((request.head.headers.first(name: "Authorization") ?? "").dropFirst(7))
        return HTTPServerResponse(
            status: 200, headers: ["Content-Type": "application/json"],
            body: Array("{\"token\":\"\(token)\"}".utf8))
    }

    private func token(_ request: HTTPServerRequest, body: [UInt8]) async -> HTTPServerResponse {
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        let (count, settings) = lock.withLock {
            counters.fetches += 1
            last = (
                request.head.headers.first(name: "Authorization"), form,
                request.head.headers.first(name: "Content-Type")
            )
            return (counters.fetches, self.settings)
        }
        if settings.delay > .zero { try? await _Concurrency.Task.sleep(for: settings.delay) }
        func json(_ status: Int, _ text: String) -> HTTPServerResponse {
            HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
        }
        if let status = settings.failWith {
            return json(status, #"{"error":"temporarily_unavailable","error_description":"SECRET-IN-ANSWER"}"#)
        }
        let token = "tok-\(count)"
        switch settings.answer {
        case .grant:
            lock.withLock { issued[token] = ContinuousClock.now + .seconds(settings.expiresIn) }
            return json(200, #"{"access_token":"\#(token)","token_type":"Bearer","expires_in":\#(settings.expiresIn)}"#)
        case .garbage: return json(200, "<html>SECRET-IN-ANSWER</html>")
        case .noToken: return json(200, #"{"token":"SECRET-IN-ANSWER"}"#)
        case .badLifetime: return json(200, #"{"access_token":"SECRET-IN-ANSWER","expires_in":-5}"#)
        case .macToken: return json(200, #"{"access_token":"SECRET-IN-ANSWER","token_type":"mac"}"#)
        case .invalidClient: return json(401, #"{"error":"invalid_client","error_description":"SECRET-IN-ANSWER"}"#)
        case .headerBreaking: return json(200, #"{"access_token":"SECRET IN\r\nANSWER"}"#)
        }
    }
}
