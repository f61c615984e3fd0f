import Foundation
import HTTPClientCore
import HTTPWire
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The package-internal `requestInCurrentTask` (the gateway's fast path) runs the same pipeline as `request`.
@Suite struct CurrentTaskRequestTests {

    @Test func networkRequestsRunThePluginsInOrderAndCarryTheTransportHead() async throws {
        try await withHttpbin { bin async throws in
            let log = Recorder<String>()
            let provider = binProvider(plugins: [
                RecordingPlugin(tag: "a", log: log, header: ("X-Added", "1")),
                RecordingPlugin(tag: "b", log: log)
            ])
            let response = try await provider.requestInCurrentTask(BinTarget(bin, "/get")).get()
            #expect(response.statusCode == 200)
            #expect(log.values == RecordingPlugin.calls(of: ["a", "b"]))
            let echo = try response.map(Echo.self)
            #expect(echo.headers["x-added"] == "1", "prepare's changes are sent")
            #expect(echo.headers["x-session"] == "s", "session headers are sent")
            #expect(response.transportHeaders?.first(name: "Content-Type") == "application/json")
            #expect(
                response.response?.value(forHTTPHeaderField: "content-type") == "application/json",
                "the HTTPURLResponse is still there, made on first use")
            #expect(response.timings != nil)
        }
    }

    @Test func validationAndTransportFailuresMatchTheCallbackAPI() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let target = BinTarget(bin, "/status/500", validationType: .successCodes)
            let direct = await provider.requestInCurrentTask(target)
            let callback = await provider.requestWithHandler(target)
            #expect(direct.failureStatus == 500 && callback.failureStatus == 500)

            var refused = BinTarget(bin, "/x")
            refused.baseURL = URL(string: "http://127.0.0.1:1")!
            guard case .failure(.underlying(let error, nil)) = await provider.requestInCurrentTask(refused) else {
                Issue.record("a refused connection fails with the transport error")
                return
            }
            #expect(error is HTTPClientError)
        }
    }

    @Test func immediateAndDelayedStubsAndCancellation() async throws {
        let log = Recorder<String>()
        let immediate = MoyaProvider<TestTarget>(
            stubClosure: MoyaProvider.immediatelyStub,
            plugins: [RecordingPlugin(tag: "p", log: log)])
        let response = try await immediate.requestInCurrentTask(TestTarget()).get()
        #expect(response.data == Data("sample".utf8))
        #expect(log.values == ["prepare:p", "willSend:p", "didReceive:p", "process:p"])
        #expect(response.transportHeaders == nil && response.timings == nil)

        let delayed = MoyaProvider<TestTarget>(stubClosure: MoyaProvider.delayedStub(5))
        let task = _Concurrency.Task { await delayed.requestInCurrentTask(TestTarget()) }
        task.cancel()
        guard case .failure(.underlying(let error as NSError, nil)) = await task.value else {
            Issue.record("a cancelled delayed stub fails")
            return
        }
        #expect(error.code == NSURLErrorCancelled)
    }
}

extension Result where Success == Moya.Response, Failure == MoyaError {
    /// The status of the response a validation failure carries.
    var failureStatus: Int? {
        if case .failure(let error) = self { return error.response?.statusCode }
        return nil
    }
}
