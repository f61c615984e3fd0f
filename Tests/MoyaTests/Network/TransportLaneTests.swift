import Foundation
import HTTPClientCore
import HTTPWire
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport lane (`MoyaProvider.init(…transportMapping:)`): `requestInCurrentTask` runs the whole pipeline on a
/// `TransportRequest`, against a real loopback server, and builds a `URLRequest` only for whoever reads one.
@Suite struct TransportLaneTests {

    @Test func pipelineRunsInOrderAndSendsWhatThePluginsPrepared() async throws {
        try await withHttpbin { bin async throws in
            let log = Recorder<String>()
            let seen = Recorder<String>()
            let mapped = Recorder<String>()
            let provider = laneProvider(
                plugins: [
                    TransportRecordingPlugin(tag: "a", log: log, header: ("X-Added", "1"), seenAuthorization: seen),
                    AccessTokenPlugin { _ in "t0ken" },
                    TransportRecordingPlugin(tag: "b", log: log)
                ], mapped: mapped)
            #expect(provider.transportLane != nil)
            var target = BinTarget(bin, "/get", headers: ["X-Target": "yes"])
            target.authorizationType = .bearer
            let response = try await provider.requestInCurrentTask(target).get()
            #expect(mapped.values == ["\(bin.baseURL.absoluteString)/get"], "the endpoint went through the mapping")
            #expect(
                log.values == [
                    "prepare:a", "prepare:b", "willSend:a", "willSend:b", "didReceive:a", "didReceive:b",
                    "process:a", "process:b"
                ])
            let echo = try response.map(Echo.self)
            #expect(
                response.transportBody.map { Data($0) } == response.data,
                "the transport's body is the data, as an array")
            #expect(echo.headers["x-added"] == "1" && echo.headers["x-target"] == "yes")
            #expect(echo.headers["authorization"] == "Bearer t0ken")
            #expect(echo.headers["x-session"] == "s", "the session's headers are sent too")
            #expect(seen.values == ["Bearer t0ken"], "willSend's RequestType shows the prepared request")
            let request = try #require(response.request, "Response.request is made on first use")
            #expect(request.url?.absoluteString == "\(bin.baseURL.absoluteString)/get")
            #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer t0ken")
            #expect(response.response?.value(forHTTPHeaderField: "Content-Type") == "application/json")
        }
    }

    @Test func aPluginWithoutATransportPrepareKeepsTheURLRequestPath() async throws {
        try await withHttpbin { bin async throws in
            let mapped = Recorder<String>()
            let provider = laneProvider(
                plugins: [RecordingPlugin(tag: "u", log: Recorder(), header: ("X-Url", "1"))],
                mapped: mapped)
            #expect(provider.transportLane == nil)
            let echo = try await provider.requestInCurrentTask(BinTarget(bin, "/get")).echo()
            #expect(echo.headers["x-url"] == "1")
            #expect(mapped.count == 0)
        }
    }

    @Test func followingRedirectsKeepsTheURLRequestPath() {
        let provider = MoyaProvider<BinTarget>(
            endpointClosure: MoyaProvider<BinTarget>.defaultEndpointMapping,
            requestClosure: MoyaProvider<BinTarget>.defaultRequestMapping,
            stubClosure: MoyaProvider<BinTarget>.neverStub, session: Session(client: HTTPClient(), headers: [:]),
            plugins: [],
            trackInflights: false, transportMapping: { $0.transportRequest() })
        #expect(provider.transportLane == nil)
    }

    @Test func challengesAreAnsweredWithTheRequestThatWasSent() async throws {
        try await withHttpbin { bin async throws in
            let credential = URLCredential(user: "u", password: "p", persistence: .none)
            let provider = laneProvider(plugins: [CredentialsPlugin { _ in credential }])
            #expect(provider.transportLane != nil)
            let basic = await provider.requestInCurrentTask(BinTarget(bin, "/basic-auth/u/p"))
            #expect(try basic.get().statusCode == 200)
            let digest = await provider.requestInCurrentTask(BinTarget(bin, "/digest-auth/u/p"))
            #expect(try digest.get().statusCode == 200)
            #expect(try digest.get().request?.value(forHTTPHeaderField: "Authorization")?.hasPrefix("Digest ") == true)

            let preemptive = laneProvider(plugins: [CredentialsPlugin(preemptive: true) { _ in credential }])
            let echo = try await preemptive.requestInCurrentTask(BinTarget(bin, "/get")).echo()
            #expect(echo.headers["authorization"] == "Basic dTpw")
        }
    }

    @Test func transportRetriersDecideAndAreAskedAfterEveryAttempt() async throws {
        try await withHttpbin { bin async throws in
            let attempts = Recorder<Int>()
            let provider = laneProvider(plugins: [StatusRetrier(status: 503, attempts: attempts)])
            #expect(provider.transportLane != nil)
            let key = UUID().uuidString
            let response = try await provider.requestInCurrentTask(BinTarget(bin, "/flaky/\(key)/2")).get()
            #expect(response.statusCode == 200)
            #expect(attempts.values == [0, 1, 2])
            #expect(bin.hits("/flaky/\(key)/2") == 3)
        }
    }

    @Test func aStreamedBodyIsSentOnceNeitherRetriedNorReplayedForAChallenge() async throws {
        try await withHttpbin { bin async throws in
            let attempts = Recorder<Int>()
            let retried = laneProvider(plugins: [StreamedBodyPlugin(), StatusRetrier(status: 503, attempts: attempts)])
            let key = UUID().uuidString
            let response = try await retried.requestInCurrentTask(BinTarget(bin, "/flaky/\(key)/2", method: .post))
                .get()
            #expect(response.statusCode == 503, "the first answer stands: the body cannot be produced again")
            #expect(attempts.values.isEmpty, "the retrier is not asked")
            #expect(bin.hits("/flaky/\(key)/2") == 1)

            let credential = URLCredential(user: "u", password: "p", persistence: .none)
            let challenged = laneProvider(plugins: [StreamedBodyPlugin(), CredentialsPlugin { _ in credential }])
            let digest = try await challenged.requestInCurrentTask(BinTarget(bin, "/digest-auth/u/p", method: .post))
                .get()
            #expect(digest.statusCode == 401, "the challenge is not answered with a consumed body")

            let collected = laneProvider(plugins: [CredentialsPlugin { _ in credential }])
            let answered = try await collected.requestInCurrentTask(
                BinTarget(
                    bin, "/digest-auth/u/p", method: .post,
                    task: .requestData(Data("x".utf8)))
            ).get()
            #expect(answered.statusCode == 200, "a body in memory is sent again with the answer")
        }
    }

    @Test func stubsRunThePluginsAndShowTheRequest() async throws {
        let log = Recorder<String>()
        let provider = MoyaProvider<TestTarget>(
            endpointClosure: MoyaProvider<TestTarget>.defaultEndpointMapping,
            requestClosure: MoyaProvider<TestTarget>.defaultRequestMapping,
            stubClosure: MoyaProvider<TestTarget>.immediatelyStub,
            session: Session(client: HTTPClient(), headers: [:], redirectHandler: .doNotFollow),
            plugins: [TransportRecordingPlugin(tag: "p", log: log, header: ("X-Stub", "1"))], trackInflights: false,
            transportMapping: { $0.transportRequest() })
        #expect(provider.transportLane != nil)
        let response = try await provider.requestInCurrentTask(TestTarget()).get()
        #expect(response.data == Data("sample".utf8))
        #expect(log.values == ["prepare:p", "willSend:p", "didReceive:p", "process:p"])
        #expect(response.request?.value(forHTTPHeaderField: "X-Stub") == "1")
    }

    @Test func aStreamedBodyNoAttemptPulledCanBeSentAgain() async throws {
        try await withHttpbin { bin async throws in
            let session = Session(client: HTTPClient(), headers: [:], redirectHandler: .doNotFollow)
            let body = AsyncThrowingStream<[UInt8], any Error> { continuation in
                continuation.yield(Array("streamed ".utf8))
                continuation.yield(Array("body".utf8))
                continuation.finish()
            }
            let http = try HTTPClientRequest(
                method: .post, url: "http://127.0.0.1:1/post", body: .stream(body, length: 13))
            var outgoing = TransportOutgoing(
                sharing: RequestTypeWrapper(transport: TransportRequest(http: http)), streamingBodiesAbove: nil)
            let refused = await outgoing.exchange(in: session, progress: HTTPClientProgress())
            #expect((try? refused.get()) == nil, "nothing listens on port 1")
            #expect(outgoing.canBeSentAgain, "the connection failed before any chunk was pulled")
            outgoing.request.http.port = bin.port
            let sent = try await outgoing.exchange(in: session, progress: HTTPClientProgress()).get()
            #expect(sent.statusCode == 200)
            #expect(bin.lastBody("/post") == Array("streamed body".utf8), "the whole body, from its start")
            #expect(!outgoing.canBeSentAgain, "once pulled, never again")
        }
    }

    @Test func aRetriersNewRequestKeepsAStreamedBodyNotYetPulled() async throws {
        try await withHttpbin { bin async throws in
            var retried = URLRequest(url: bin.baseURL.appendingPathComponent("post"))
            retried.httpMethod = "POST"
            retried.setValue("1", forHTTPHeaderField: "X-Retried")
            let provider = laneProvider(plugins: [StreamedBodyPlugin(), ReplacingRetrier(replacement: retried)])
            var target = BinTarget(bin, "/post", method: .post)
            target.baseURL = URL(string: "http://127.0.0.1:1")!
            let response = try await provider.requestInCurrentTask(target).get()
            #expect(response.statusCode == 200)
            #expect(bin.lastHeaders("/post")?.first(name: "X-Retried") == "1")
            #expect(bin.lastBody("/post") == Array("streamed body".utf8), "the stream went with the new request")
        }
    }

    @Test func immediateStubsAreAnsweredSynchronouslyAndOthersAreDeclined() throws {
        func provider(_ stub: @escaping (TestTarget) -> StubBehavior, log: Recorder<String>, lane: Bool = true)
            -> MoyaProvider<TestTarget>
        {
            MoyaProvider<TestTarget>(
                endpointClosure: MoyaProvider<TestTarget>.defaultEndpointMapping,
                requestClosure: MoyaProvider<TestTarget>.defaultRequestMapping, stubClosure: stub,
                session: Session(client: HTTPClient(), headers: [:], redirectHandler: lane ? .doNotFollow : .follow),
                plugins: [TransportRecordingPlugin(tag: "p", log: log, header: ("X-Stub", "1"))], trackInflights: false,
                transportMapping: { $0.transportRequest() })
        }
        let log = Recorder<String>()
        let immediate = provider(MoyaProvider<TestTarget>.immediatelyStub, log: log)
        let response = try #require(immediate.requestImmediately(TestTarget())).get()
        #expect(response.data == Data("sample".utf8))
        #expect(log.values == ["prepare:p", "willSend:p", "didReceive:p", "process:p"], "the whole pipeline, in order")
        #expect(response.request?.value(forHTTPHeaderField: "X-Stub") == "1")

        let declined = Recorder<String>()
        #expect(
            provider(MoyaProvider<TestTarget>.delayedStub(0.01), log: declined).requestImmediately(TestTarget()) == nil)
        #expect(provider(MoyaProvider<TestTarget>.neverStub, log: declined).requestImmediately(TestTarget()) == nil)
        #expect(
            provider(MoyaProvider<TestTarget>.immediatelyStub, log: declined, lane: false).requestImmediately(
                TestTarget()) == nil)
        #expect(declined.values.isEmpty, "no plugin saw a declined request")
    }

    @Test func mappingFailuresAndEncodedTasks() async throws {
        try await withHttpbin { bin async throws in
            let provider = laneProvider(plugins: [])
            var target = BinTarget(bin, "/get")
            target.baseURL = URL(string: "ftp://127.0.0.1")!
            guard case .failure(.requestMapping(let url)) = await provider.requestInCurrentTask(target) else {
                Issue.record("a URL the transport cannot send to is a request-mapping error")
                return
            }
            #expect(url == "ftp://127.0.0.1/get")

            let mapped = Recorder<String>()
            let encoding = laneProvider(plugins: [], mapped: mapped)
            let query = BinTarget(
                bin, "/get", task: .requestParameters(parameters: ["q": "a b"], encoding: URLEncoding.default))
            let echo = try await encoding.requestInCurrentTask(query).echo()
            #expect(echo.query == "q=a%20b", "tasks that need encoding take the URLRequest path")
            #expect(mapped.count == 1, "the mapping was asked and declined")

            let data = BinTarget(bin, "/post", method: .post, task: .requestData(Data("hello".utf8)))
            let posted = try await provider.requestInCurrentTask(data).echo()
            #expect(posted.body == "hello" && posted.method == "POST")
        }
    }

    @Test func aPreparedTimeoutBoundsTheExchange() async throws {
        try await withHttpbin { bin async throws in
            let provider = laneProvider(plugins: [TimeoutPlugin(timeout: .milliseconds(200))])
            let started = ContinuousClock.now
            let result = await provider.requestInCurrentTask(BinTarget(bin, "/delay/3000"))
            guard case .failure(.underlying(let error, nil)) = result else {
                Issue.record("the exchange times out")
                return
            }
            #expect(error is HTTPClientError)
            #expect(started.duration(to: .now) < .seconds(3))
        }
    }
}

/// A provider on the transport lane: default mappings, a non-following session with fixed headers.
private func laneProvider(plugins: [PluginType], mapped: Recorder<String> = Recorder()) -> MoyaProvider<BinTarget> {
    MoyaProvider<BinTarget>(
        endpointClosure: MoyaProvider<BinTarget>.defaultEndpointMapping,
        requestClosure: MoyaProvider<BinTarget>.defaultRequestMapping,
        stubClosure: MoyaProvider<BinTarget>.neverStub,
        session: Session(client: HTTPClient(), headers: ["X-Session": "s"], redirectHandler: .doNotFollow),
        plugins: plugins, trackInflights: false,
        transportMapping: { endpoint in
            mapped.append(endpoint.url)
            return endpoint.transportRequest()
        })
}

/// Records every hook as "<hook>:<tag>"; its transport `prepare` adds `header`; `willSend` records the
/// `Authorization` of the request it is shown.
private struct TransportRecordingPlugin: TransportPlugin {
    let tag: String
    let log: Recorder<String>
    var header: (String, String)? = nil
    var seenAuthorization: Recorder<String>? = nil

    func prepare(_ request: inout TransportRequest, target: TargetType) {
        log.append("prepare:\(tag)")
        if let header { request.http.headers.replaceOrAdd(name: header.0, value: header.1) }
    }
    func willSend(_ request: RequestType, target: TargetType) {
        log.append("willSend:\(tag)")
        if let seenAuthorization, let value = request.request?.value(forHTTPHeaderField: "Authorization") {
            seenAuthorization.append(value)
        }
    }
    func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) { log.append("didReceive:\(tag)") }
    func process(_ result: Result<Moya.Response, MoyaError>, target: TargetType) -> Result<Moya.Response, MoyaError> {
        log.append("process:\(tag)")
        return result
    }
}

/// Retries a response with `status` at once, recording the attempt numbers it is asked about.
private struct StatusRetrier: TransportRetrier, TransportPlugin {
    let status: Int
    let attempts: Recorder<Int>

    func prepare(_ request: inout TransportRequest, target: TargetType) {}

    func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        Issue.record("the lane asks the transport variant")
        return .doNotRetry
    }

    func retry(
        _ request: TransportRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        attempts.append(attempt)
        return result.httpResponse?.statusCode == status ? .retry(after: 0) : .doNotRetry
    }
}

/// Answers the first failure with `replacement` (a `URLRequest`, as a token refresh would).
private struct ReplacingRetrier: TransportRetrier, TransportPlugin {
    let replacement: URLRequest

    func prepare(_ request: inout TransportRequest, target: TargetType) {}

    func retry(
        _ request: URLRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        .doNotRetry
    }

    func retry(
        _ request: TransportRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        guard attempt == 0, case .failure = result else { return .doNotRetry }
        return .retry(after: 0, request: replacement)
    }
}

/// Sends a body produced by an async sequence (which cannot be replayed).
private struct StreamedBodyPlugin: TransportPlugin {
    func prepare(_ request: inout TransportRequest, target: TargetType) {
        let chunks = [Array("streamed ".utf8), Array("body".utf8)]
        request.http.body = .stream(
            AsyncThrowingStream { continuation in
                for chunk in chunks { continuation.yield(chunk) }
                continuation.finish()
            }, length: 13)
    }
}

/// Sets the whole-exchange timeout.
private struct TimeoutPlugin: TransportPlugin {
    let timeout: Duration
    func prepare(_ request: inout TransportRequest, target: TargetType) { request.timeout = timeout }
}
