import Foundation
import Testing

@testable import Moya

@Suite struct MoyaProviderAsyncTests {
    @Test func immediateStub() async throws {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.immediatelyStub)
        let result = await provider.request(.zen)
        #expect(try result.get().data == GitHub.zen.sampleData)
        let response = try await provider.response(.zen)
        #expect(response.statusCode == 200)
    }

    @Test func failureEndpoint() async {
        let error = NSError(
            domain: "Test", code: 1, userInfo: [NSLocalizedDescriptionKey: "Houston, we have a problem"])
        let provider = MoyaProvider<GitHub>(
            endpointClosure: { target in
                Endpoint(
                    url: URL(target: target).absoluteString, sampleResponseClosure: { .networkError(error) },
                    method: target.method, task: target.task, httpHeaderFields: nil)
            }, stubClosure: MoyaProvider.immediatelyStub)
        guard case .failure(.underlying(let e, _)) = await provider.request(.zen) else {
            Issue.record("expected failure")
            return
        }
        #expect(e.localizedDescription == "Houston, we have a problem")
        await #expect(throws: MoyaError.self) { try await provider.response(.zen) }
    }

    @Test func delayedStub() async throws {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.delayedStub(0.05))
        #expect(try await provider.request(.zen).get().data == GitHub.zen.sampleData)
    }

    /// A delay that is not a number, or negative, answers at once through every entry point instead of trapping.
    @Test func aDelayThatIsNotANumberAnswersAtOnce() async throws {
        for seconds: Double in [.nan, -1, -Double.infinity] {
            let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.delayedStub(seconds))
            #expect(try await provider.request(.zen).get().data == GitHub.zen.sampleData, "\(seconds)")
            #expect(try await provider.requestInCurrentTask(.zen).get().data == GitHub.zen.sampleData, "\(seconds)")
        }
    }

    @Test func taskCancellationCancelsTheRequest() async {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.delayedStub(10))
        let start = Date()
        let task = AsyncTask { await provider.request(.zen) }
        try? await AsyncTask.sleep(nanoseconds: 50_000_000)
        task.cancel()
        let result = await task.value
        if case .failure(let error) = result {
            #expect(error.isCancellation)
        } else {
            Issue.record("expected cancellation")
        }
        #expect(Date().timeIntervalSince(start) < 9, "ended by the cancellation, not by the 10 s stub delay")
    }

    @Test func alreadyCancelledTask() async {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.delayedStub(10))
        let task = AsyncTask {
            withUnsafeCurrentTask { $0?.cancel() }
            return await provider.request(.zen)
        }
        if case .failure(let error) = await task.value {
            #expect(error.isCancellation)
        } else {
            Issue.record("expected cancellation")
        }
    }

    @Test func progressStreamForStub() async {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.delayedStub(0.01))
        var values: [Result<ProgressResponse, MoyaError>] = []
        for await value in provider.requestWithProgress(.zen) { values.append(value) }
        #expect(values.count == 1)
        if case .success(let progress)? = values.first {
            #expect(progress.completed)
            #expect(progress.progress == 1.0)
            #expect(progress.response?.data == GitHub.zen.sampleData)
        } else {
            Issue.record("expected success")
        }
    }

    @Test func progressStreamFailure() async {
        let provider = MoyaProvider<GitHub>(
            endpointClosure: { target in
                Endpoint(
                    url: URL(target: target).absoluteString,
                    sampleResponseClosure: { .networkError(NSError(domain: "x", code: 1)) },
                    method: target.method, task: target.task, httpHeaderFields: nil)
            }, stubClosure: MoyaProvider.immediatelyStub)
        var failures = 0
        await provider.requestWithProgress(.zen).forEach { if case .failure = $0 { failures += 1 } }
        #expect(failures == 1)
    }
}
