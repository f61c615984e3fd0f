import Foundation
import Locking
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct MoyaProviderStubTests {

    @Test func immediateStubIsSynchronous() throws {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.immediatelyStub)
        var result: Result<Response, MoyaError>?
        provider.request(.zen) { result = $0 }
        let response = try #require(try result?.get())
        #expect(response.data == GitHub.zen.sampleData)
        #expect(response.statusCode == 200)
        #expect(response.response == nil)
        #expect(response.request?.url?.absoluteString == "https://api.github.com/zen")
    }

    @Test func delayedStub() async {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.delayedStub(0.05))
        let done = Recorder<Result<Response, MoyaError>>()
        let start = Date()
        provider.request(.zen) { done.append($0) }
        #expect(done.count == 0)
        #expect(await waitUntil { done.count == 1 })
        #expect(Date().timeIntervalSince(start) >= 0.04)
        #expect((try? done.values.first?.get())?.data == GitHub.zen.sampleData)
    }

    @Test func immediateStubOnQueue() async {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.immediatelyStub)
        let queue = DispatchQueue(label: "test.queue")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let onQueue = Recorder<Bool>()
        provider.request(.zen, callbackQueue: queue) { _ in onQueue.append(DispatchQueue.getSpecific(key: key) == true)
        }
        #expect(await waitUntil { onQueue.count == 1 })
        #expect(onQueue.values == [true])
    }

    func provider(sample: @escaping Endpoint.SampleResponseClosure, validation: ValidationType = .none) -> MoyaProvider<
        TestTarget
    > {
        MoyaProvider<TestTarget>(
            endpointClosure: { target in
                Endpoint(
                    url: URL(target: target).absoluteString, sampleResponseClosure: sample, method: target.method,
                    task: target.task, httpHeaderFields: target.headers)
            }, stubClosure: MoyaProvider.immediatelyStub)
    }

    @Test func networkErrorStub() {
        let error = NSError(
            domain: "Test", code: 7, userInfo: [NSLocalizedDescriptionKey: "Houston, we have a problem"])
        var result: Result<Response, MoyaError>?
        provider(sample: { .networkError(error) }).request(TestTarget()) { result = $0 }
        guard case .failure(.underlying(let underlying, nil))? = result else {
            Issue.record("expected underlying")
            return
        }
        #expect(underlying.localizedDescription == "Houston, we have a problem")
    }

    @Test func customResponseStubPassesInstanceThrough() throws {
        let http = HTTPURLResponse(
            url: URL(string: "https://example.com/path")!, statusCode: 201, httpVersion: "HTTP/1.1",
            headerFields: ["X": "y"])!
        var result: Result<Response, MoyaError>?
        provider(sample: { .response(http, Data("d".utf8)) }).request(TestTarget()) { result = $0 }
        let response = try #require(try result?.get())
        #expect(response.response === http)
        #expect(response.statusCode == 201)
    }

    @Test func stubValidation() {
        var result: Result<Response, MoyaError>?
        provider(sample: { .networkResponse(500, Data()) }).request(TestTarget(validationType: .successCodes)) {
            result = $0
        }
        guard case .failure(let error)? = result, case .underlying(let inner as MoyaError, let response) = error,
            case .statusCode = inner
        else {
            Issue.record("expected status code failure")
            return
        }
        #expect(response?.statusCode == 500)
        #expect(error.response?.statusCode == 500)
        var ok: Result<Response, MoyaError>?
        provider(sample: { .networkResponse(418, Data()) }).request(TestTarget(validationType: .customCodes([418]))) {
            ok = $0
        }
        #expect((try? ok?.get())?.statusCode == 418)
    }

    @Test func pluginOrder() throws {
        let log = Recorder<String>()
        let provider = MoyaProvider<GitHub>(
            stubClosure: MoyaProvider.immediatelyStub,
            plugins: [
                RecordingPlugin(tag: "1", log: log, header: ("X-One", "1")),
                RecordingPlugin(tag: "2", log: log)
            ])
        var result: Result<Response, MoyaError>?
        provider.request(.zen) { result = $0 }
        #expect(
            log.values == [
                "prepare:1", "prepare:2", "willSend:1", "willSend:2", "didReceive:1", "didReceive:2", "process:1",
                "process:2"
            ])
        #expect(try result?.get().request?.value(forHTTPHeaderField: "X-One") == "1")
    }

    @Test func requestClosureFailureSkipsWillSendAndDidReceive() {
        let log = Recorder<String>()
        let provider = MoyaProvider<GitHub>(
            requestClosure: { _, done in done(.failure(.requestMapping("nope"))) },
            stubClosure: MoyaProvider.immediatelyStub,
            plugins: [RecordingPlugin(tag: "1", log: log)])
        var result: Result<Response, MoyaError>?
        provider.request(.zen) { result = $0 }
        guard case .failure(.requestMapping("nope"))? = result else {
            Issue.record("expected requestMapping")
            return
        }
        #expect(log.values == ["process:1"])
    }

    @Test func invalidURLBecomesRequestMapping() {
        let provider = MoyaProvider<TestTarget>(
            endpointClosure: { target in
                Endpoint(
                    url: "some invalid URL", sampleResponseClosure: { .networkResponse(200, Data()) }, method: .get,
                    task: .requestPlain, httpHeaderFields: nil)
            }, stubClosure: MoyaProvider.immediatelyStub)
        var result: Result<Response, MoyaError>?
        provider.request(TestTarget()) { result = $0 }
        guard case .failure(.requestMapping)? = result else {
            Issue.record("expected requestMapping")
            return
        }
    }

    @Test func encodableFailureArrivesWrapped() {
        struct Failing: Encodable { func encode(to encoder: Encoder) throws { throw CocoaError(.coderInvalidValue) } }
        let provider = MoyaProvider<TestTarget>(stubClosure: MoyaProvider.immediatelyStub)
        var result: Result<Response, MoyaError>?
        provider.request(TestTarget(method: .post, task: .requestJSONEncodable(Failing()))) { result = $0 }
        guard case .failure(.underlying(let inner as MoyaError, nil))? = result, case .encodableMapping = inner else {
            Issue.record("expected wrapped encodableMapping")
            return
        }
    }

    @Test func cancelDelayedStub() async {
        let log = Recorder<String>()
        let provider = MoyaProvider<GitHub>(
            stubClosure: MoyaProvider.delayedStub(10), plugins: [RecordingPlugin(tag: "p", log: log)])
        let done = Recorder<Result<Response, MoyaError>>()
        let token = provider.request(.zen) { done.append($0) }
        token.cancel()
        #expect(token.isCancelled)
        #expect(await waitUntil(timeout: 2) { done.count == 1 })
        if case .failure(let error)? = done.values.first {
            #expect(error.isCancellation)
        } else {
            Issue.record("expected cancel")
        }
        #expect(log.values.contains("didReceive:p"))
    }

    @Test func neverStubBehaviorInStubRequestIsAnError() {
        let provider = MoyaProvider<GitHub>()
        var result: Result<Response, MoyaError>?
        provider.stubRequest(
            .zen, request: URLRequest(url: URL(string: "https://a")!), callbackQueue: nil,
            completion: { result = $0 }, endpoint: provider.endpoint(.zen), stubBehavior: .never)
        guard case .failure(.underlying(let inner, nil))? = result else {
            Issue.record("expected failure")
            return
        }
        #expect((inner as? MoyaRequestError) == .stubBehaviorNever)
    }

    @Test func progressResponse() {
        let progress = Progress(totalUnitCount: 4)
        progress.completedUnitCount = 1
        #expect(ProgressResponse(progress: progress).progress == 0.25)
        #expect(!ProgressResponse(progress: progress).completed)
        #expect(ProgressResponse(progress: progress, response: Response(statusCode: 200, data: Data())).progress == 1.0)
        #expect(ProgressResponse(progress: Progress(totalUnitCount: 0)).progress == 0)
        #expect(ProgressResponse().progress == 0)
    }

    @Test func convertResponseToResultCases() {
        let http = HTTPURLResponse(
            url: URL(string: "https://a")!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        let error = NSError(domain: "e", code: 1)
        if case .success(let r) = convertResponseToResult(http, request: nil, data: nil, error: nil) {
            #expect(r.data.isEmpty)
        } else {
            Issue.record("1")
        }
        if case .failure(.underlying(_, let r)) = convertResponseToResult(http, request: nil, data: nil, error: error) {
            #expect(r != nil)
        } else {
            Issue.record("2")
        }
        if case .failure(.underlying(_, nil)) = convertResponseToResult(nil, request: nil, data: nil, error: error) {
        } else {
            Issue.record("3")
        }
        if case .failure(.underlying(let e as NSError, nil)) = convertResponseToResult(
            nil, request: nil, data: nil, error: nil)
        {
            #expect(e.code == NSURLErrorUnknown)
        } else {
            Issue.record("4")
        }
    }

    @Test func defaultSession() {
        let session = MoyaProvider<GitHub>.defaultAlamofireSession()
        #expect(session.startRequestsImmediately == false)
        #expect(session.headers["Accept-Encoding"]?.contains("gzip") == true)
        #expect(session.headers["Accept-Language"]?.contains(";q=1.0") == true)
        #expect(session.headers["User-Agent"]?.contains("Linux") == true)
    }
}

@Suite struct TrackInflightsTests {
    @Test func concurrentIdenticalRequestsShareOneCall() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 2, counter: counter)
        let results = Recorder<Response>()
        let countsInside = Recorder<Int>()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    provider.request(.zen) { result in
                        countsInside.append(provider.inflightRequests.count)
                        if case .success(let r) = result { results.append(r) }
                    }
                }
            }
        }
        #expect(provider.inflightRequests.count == 1)
        #expect(provider.inflightRequests.values.first?.count == 20)
        #expect(await waitUntil { results.count == 20 })
        #expect(counter.count == 1)
        #expect(Set(results.values.map { ObjectIdentifier($0) }).count == 1)
        #expect(countsInside.values.allSatisfy { $0 == 1 })
        #expect(await waitUntil { provider.inflightRequests.isEmpty })
        // A later identical request makes a new call.
        let later = Recorder<Int>()
        provider.request(.zen) { _ in later.append(1) }
        #expect(await waitUntil { later.count == 1 })
        #expect(counter.count == 2)
    }

    @Test func differentRequestsAreNotShared() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 0.05, counter: counter)
        let done = Recorder<Int>()
        provider.request(.userProfile("a")) { _ in done.append(1) }
        provider.request(.userProfile("b")) { _ in done.append(1) }
        #expect(await waitUntil { done.count == 2 })
        #expect(counter.count == 2)
    }

    @Test func oneWaiterCancellingDoesNotFailOthers() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 0.2, counter: counter)
        let first = Recorder<Result<Response, MoyaError>>()
        let second = Recorder<Result<Response, MoyaError>>()
        let token = provider.request(.zen) { first.append($0) }
        provider.request(.zen) { second.append($0) }
        token.cancel()
        #expect(await waitUntil { first.count == 1 && second.count == 1 })
        if case .failure(let error)? = first.values.first {
            #expect(error.isCancellation)
        } else {
            Issue.record("first should be cancelled")
        }
        #expect((try? second.values.first?.get())?.data == GitHub.zen.sampleData)
        #expect(counter.count == 1)
    }

    @Test func lastWaiterCancellingCancelsTheCall() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 5, counter: counter)
        let first = Recorder<Result<Response, MoyaError>>()
        let second = Recorder<Result<Response, MoyaError>>()
        let a = provider.request(.zen) { first.append($0) }
        let b = provider.request(.zen) { second.append($0) }
        a.cancel()
        b.cancel()
        #expect(await waitUntil(timeout: 2) { first.count == 1 && second.count == 1 })
        #expect(
            first.values.allSatisfy { if case .failure(let e) = $0 { return e.isCancellation } else { return false } })
        #expect(
            second.values.allSatisfy { if case .failure(let e) = $0 { return e.isCancellation } else { return false } })
        #expect(counter.count == 0)
        #expect(await waitUntil { provider.inflightRequests.isEmpty })
    }

    @Test func requestClosureFailureRemovesEntryAndFailsAllWaiters() async {
        let gate = DispatchSemaphore(value: 0)
        let provider = MoyaProvider<GitHub>(
            requestClosure: { _, done in
                let box = UncheckedSendable(done)
                DispatchQueue.global().async {
                    gate.wait()
                    box.value(.failure(.requestMapping("x")))
                }
            }, stubClosure: MoyaProvider.immediatelyStub, trackInflights: true)
        let results = Recorder<Result<Response, MoyaError>>()
        provider.request(.zen) { results.append($0) }
        provider.request(.zen) { results.append($0) }
        #expect(provider.inflightRequests.count == 1)
        gate.signal()
        #expect(await waitUntil { results.count == 2 })
        #expect(
            results.values.allSatisfy { if case .failure(.requestMapping) = $0 { return true } else { return false } })
        #expect(await waitUntil { provider.inflightRequests.isEmpty })
    }

    @Test func immediateStubsAreNotDeduplicated() {
        let counter = Recorder<Int>()
        let provider = MoyaProvider<GitHub>(
            endpointClosure: { target in
                Endpoint(
                    url: URL(target: target).absoluteString,
                    sampleResponseClosure: {
                        counter.append(1)
                        return .networkResponse(200, Data())
                    },
                    method: target.method, task: target.task, httpHeaderFields: nil)
            }, stubClosure: MoyaProvider.immediatelyStub, trackInflights: true)
        provider.request(.zen) { _ in }
        provider.request(.zen) { _ in }
        #expect(counter.count == 2)
        #expect(provider.inflightRequests.isEmpty)
    }
}
