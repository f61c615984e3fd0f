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
