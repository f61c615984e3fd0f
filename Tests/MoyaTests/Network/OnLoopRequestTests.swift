import Foundation
import HTTPClientCore
import Locking
import NetCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The package-internal `request(onLoop:)` (the gateway's callback lane) runs `requestInCurrentTask`'s pipeline and
/// answers on the caller's loop, after `request(onLoop:)` returned: by the client's callback when nothing could send
/// the request again, in a task otherwise (a stub, a retrier).
@Suite struct OnLoopRequestTests {
    /// What a completion saw.
    private struct Seen: @unchecked Sendable {
        var result: Result<Moya.Response, MoyaError>
        var onLoop: Bool
        var afterReturn: Bool
    }

    /// Hands the result to a closure.
    private final class Completion: MoyaLoopCompletion {
        let body: (Result<Moya.Response, MoyaError>) -> Void
        init(_ body: @escaping (Result<Moya.Response, MoyaError>) -> Void) { self.body = body }
        func requestCompleted(_ result: consuming Result<Moya.Response, MoyaError>) { body(result) }
    }

    /// What a completion that takes the client's responses saw: the client's response, or a `Response`.
    private enum Delivered: @unchecked Sendable {
        case exchanged(Result<HTTPClientResponseOrStream, MoyaError>)
        case response(Result<Moya.Response, MoyaError>)
    }

    /// Takes the client's responses when the provider offers them.
    private final class ClientCompletion: MoyaLoopCompletion {
        let body: (Delivered) -> Void
        init(_ body: @escaping (Delivered) -> Void) { self.body = body }
        var acceptsClientResponses: Bool { true }
        func requestCompleted(_ result: consuming Result<Moya.Response, MoyaError>) { body(.response(result)) }
        func requestCompleted(exchanged result: consuming Result<HTTPClientResponseOrStream, MoyaError>) {
            body(.exchanged(result))
        }
    }

    /// A plugin that only prepares: it adds a header.
    private struct HeaderPlugin: PreparingTransportPlugin {
        func prepare(_ request: inout TransportRequest, target: TargetType) {
            request.http.headers.add(name: "X-Prepared", value: "yes")
        }
    }

    /// A transport plugin that reads results: it counts its `didReceive` calls.
    private struct ReadingPlugin: TransportPlugin {
        let received: Recorder<Int>
        func prepare(_ request: inout TransportRequest, target: TargetType) {}
        func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) {
            received.append((try? result.get())?.statusCode ?? 0)
        }
    }

    /// A provider on the transport lane (no redirects followed).
    private static func laneProvider(plugins: [PluginType], headers: [String: String] = [:])
        -> MoyaProvider<BinTarget>
    {
        MoyaProvider<BinTarget>(
            endpointClosure: MoyaProvider<BinTarget>.defaultEndpointMapping,
            requestClosure: MoyaProvider<BinTarget>.defaultRequestMapping,
            stubClosure: MoyaProvider<BinTarget>.neverStub,
            session: Session(client: HTTPClient(), headers: headers, redirectHandler: .doNotFollow),
            plugins: plugins, trackInflights: false, transportMapping: { $0.transportRequest() })
    }

    /// Calls `request(onLoop:)` with a ``ClientCompletion`` from the loop of `provider`'s client and waits for it.
    private static func delivered<T: TargetType>(_ provider: MoyaProvider<T>, _ target: T) async -> Delivered {
        let loop = provider.session.client.group.loops[0]
        let shared = UncheckedSendable((provider, target))
        return await withCheckedContinuation { (continuation: CheckedContinuation<Delivered, Never>) in
            loop.execute {
                let (provider, target) = shared.value
                _ = provider.request(
                    onLoop: target, completion: ClientCompletion { continuation.resume(returning: $0) })
            }
        }
    }

    @Test func theClientsResponseIsHandedOverWhenNoPluginReadsTheResult() async throws {
        try await withHttpbin { bin async throws in
            let preparing = Self.laneProvider(plugins: [HeaderPlugin()])
            #expect(preparing.hasTransportLane)
            let delivered = await Self.delivered(preparing, BinTarget(bin, "/get"))
            guard case .exchanged(.success(.collected(let response))) = delivered else {
                Issue.record("plugins that only prepare: the client's response as it came, not \(delivered)")
                return
            }
            #expect(response.status == 200)
            let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
            #expect(echo.headers["x-prepared"] == "yes", "prepare's changes are sent")

            let refused = await Self.delivered(preparing, BinTarget(bin, "/status/500", validationType: .successCodes))
            guard case .exchanged(let result) = refused,
                case .failure(.underlying(MoyaError.statusCode(let moya), _)) = result
            else {
                Issue.record("a status the validation refuses is the statusCode error, as from the task pipeline")
                return
            }
            #expect(moya.statusCode == 500)

            let received = Recorder<Int>()
            let reading = Self.laneProvider(plugins: [HeaderPlugin(), ReadingPlugin(received: received)])
            #expect(reading.hasTransportLane)
            guard case .response(.success(let seen)) = await Self.delivered(reading, BinTarget(bin, "/get")) else {
                Issue.record("a plugin that reads the result gets a Response, and so does the completion")
                return
            }
            #expect(seen.statusCode == 200)
            #expect(received.values == [200])

            let withSessionHeaders = Self.laneProvider(plugins: [HeaderPlugin()], headers: ["X-Session": "s"])
            let merged = await Self.delivered(withSessionHeaders, BinTarget(bin, "/get"))
            guard case .response(.success(let merged)) = merged else {
                Issue.record("session headers are merged on the general path, which makes a Response")
                return
            }
            #expect(try merged.map(Echo.self).headers["x-session"] == "s")
        }
    }

    @Test func aTargetMappingSendsWithoutAnEndpoint() async throws {
        try await withHttpbin { bin async throws in
            let endpoints = Recorder<String>()
            let origin = KnownOrigin(HTTPOrigin(scheme: "http", host: "127.0.0.1", port: bin.port))
            let provider = MoyaProvider<BinTarget>(
                endpointClosure: { target in
                    endpoints.append(target.path)
                    return MoyaProvider<BinTarget>.defaultEndpointMapping(for: target)
                },
                requestClosure: MoyaProvider<BinTarget>.defaultRequestMapping,
                stubClosure: MoyaProvider<BinTarget>.neverStub,
                session: Session(client: HTTPClient(), headers: [:], redirectHandler: .doNotFollow),
                plugins: [HeaderPlugin()], trackInflights: false,
                transportMapping: { $0.transportRequest(knownOrigin: origin) },
                targetMapping: { target in
                    target.path == "/anything/endpoint"
                        ? nil
                        : TransportRequest.known(
                            origin, target: target.path, method: target.method, headers: target.headers,
                            task: target.task)
                })
            for path in ["/anything/mapped", "/anything/endpoint"] {
                var target = BinTarget(bin, path, method: .post, task: .requestData(Data("body".utf8)))
                target.headers = ["X-B": "2", "X-A": "1"]
                guard case .exchanged(.success(.collected(let response))) = await Self.delivered(provider, target)
                else {
                    Issue.record("\(path): the client's response")
                    return
                }
                let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
                #expect(echo.method == "POST" && echo.path == path && echo.body == "body")
                #expect(echo.headers["x-a"] == "1" && echo.headers["x-b"] == "2" && echo.headers["x-prepared"] == "yes")
            }
            #expect(endpoints.values == ["/anything/endpoint"], "an endpoint only for the target the mapping left")
        }
    }

    @Test func aKnownRequestIsTheOneTheEndpointMakes() throws {
        let origin = KnownOrigin(HTTPOrigin(scheme: "http", host: "example.test", port: 8080))
        let headers = ["X-Z": "z", "Accept": "a/b", "x-m": "m"]
        for (target, task) in [("/a?b=c", Moya.Task.requestPlain), ("/p", .requestData(Data([1, 2, 3])))] {
            let endpoint = Endpoint(
                origin: origin.prefix, target: target, sampleResponseClosure: { .networkResponse(200, Data()) },
                method: .put, task: task, httpHeaderFields: headers)
            let viaEndpoint = try #require(try endpoint.transportRequest(knownOrigin: origin)?.get())
            let known = try #require(
                TransportRequest.known(origin, target: target, method: .put, headers: headers, task: task))
            #expect(known.http.method == viaEndpoint.http.method && known.http.target == viaEndpoint.http.target)
            #expect(known.http.origin == viaEndpoint.http.origin)
            let knownFields = known.http.headers.map { "\($0.name): \($0.value)" }
            #expect(knownFields == viaEndpoint.http.headers.map { "\($0.name): \($0.value)" })
            #expect("\(known.http.body)" == "\(viaEndpoint.http.body)")
        }
        #expect(
            TransportRequest.known(origin, target: "/a#frag", method: .get, headers: nil, task: .requestPlain) == nil,
            "a fragment is left to the endpoint")
        #expect(
            TransportRequest.known(
                origin, target: "/u", method: .post, headers: nil,
                task: .requestParameters(parameters: ["a": 1], encoding: JSONEncoding.default)) == nil,
            "a task that needs encoding is left to the endpoint")
    }

    /// Calls `request(onLoop:)` from the loop of `provider`'s client and waits for its completion.
    private static func onLoop<T: TargetType>(
        _ provider: MoyaProvider<T>, _ target: T, cancelAfter: Duration? = nil
    ) async -> Seen {
        let loop = provider.session.client.group.loops[0]
        let shared = UncheckedSendable((provider, target))
        return await withCheckedContinuation { (continuation: CheckedContinuation<Seen, Never>) in
            loop.execute {
                let (provider, target) = shared.value
                let returned = Locked(false)
                let completion = Completion { result in
                    continuation.resume(
                        returning: Seen(result: result, onLoop: loop.inEventLoop, afterReturn: returned.withLock { $0 })
                    )
                }
                let sent = provider.request(onLoop: target, completion: completion)
                returned.withLock { $0 = true }
                if let cancelAfter { _ = loop.schedule(after: cancelAfter) { sent.cancel() } }
            }
        }
    }

    @Test func aNetworkRequestRunsThePluginsAndAnswersOnTheLoop() async throws {
        try await withHttpbin { bin async throws in
            for headers in [["X-Session": "s"], [:]] {
                let log = Recorder<String>()
                let provider = binProvider(
                    plugins: [
                        RecordingPlugin(tag: "a", log: log, header: ("X-Added", "1")),
                        RecordingPlugin(tag: "b", log: log)
                    ], headers: headers)
                let seen = await Self.onLoop(provider, BinTarget(bin, "/get"))
                #expect(seen.onLoop && seen.afterReturn)
                let response = try seen.result.get()
                #expect(response.statusCode == 200)
                #expect(log.values == RecordingPlugin.calls(of: ["a", "b"]))
                let echo = try response.map(Echo.self)
                #expect(echo.headers["x-added"] == "1", "prepare's changes are sent")
                #expect(echo.headers["x-session"] == headers["X-Session"], "session headers are sent")
                #expect(response.transportHeaders?.first(name: "Content-Type") == "application/json")
                #expect(response.request != nil && response.timings != nil)
            }
        }
    }

    @Test func validationAndTransportFailuresMatchTheTaskPipeline() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let target = BinTarget(bin, "/status/500", validationType: .successCodes)
            let seen = await Self.onLoop(provider, target)
            let inTask = await provider.requestInCurrentTask(target)
            #expect(seen.result.failureStatus == 500 && inTask.failureStatus == 500)

            var refused = BinTarget(bin, "/x")
            refused.baseURL = URL(string: "http://127.0.0.1:1")!
            guard case .failure(.underlying(let error, nil)) = await Self.onLoop(provider, refused).result else {
                Issue.record("a refused connection fails with the transport error")
                return
            }
            #expect(error is HTTPClientError)
        }
    }

    @Test func cancellingAnswersWithTheCancellationError() async throws {
        try await withHttpbin { bin async throws in
            let seen = await Self.onLoop(binProvider(), BinTarget(bin, "/delay/3000"), cancelAfter: .milliseconds(100))
            guard case .failure(.underlying(let error as NSError, nil)) = seen.result else {
                Issue.record("a cancelled request fails: \(seen.result)")
                return
            }
            #expect(error.code == NSURLErrorCancelled)
        }
    }

    @Test func aStubbedRequestAnswersFromATaskOnTheLoop() async throws {
        let log = Recorder<String>()
        let provider = MoyaProvider<TestTarget>(
            stubClosure: MoyaProvider.delayedStub(0.01), session: Session(client: HTTPClient()),
            plugins: [RecordingPlugin(tag: "p", log: log)])
        let seen = await Self.onLoop(provider, TestTarget())
        #expect(seen.onLoop && seen.afterReturn)
        #expect(try seen.result.get().data == Data("sample".utf8))
        #expect(log.values == ["prepare:p", "willSend:p", "didReceive:p", "process:p"])
    }
}
