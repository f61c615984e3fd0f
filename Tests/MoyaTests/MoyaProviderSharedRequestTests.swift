import Foundation
import Testing

@testable import Moya

/// `await provider.request(_:)` on a provider with `trackInflights`: identical requests share one call that belongs
/// to all its waiters.
@Suite struct MoyaProviderSharedRequestTests {
    private func isCancellation(_ result: Result<Response, MoyaError>?) -> Bool {
        if case .failure(let error)? = result { return error.isCancellation }
        return false
    }

    @Test func concurrentAsyncCallersShareOneCallAndEachGetsProcess() async throws {
        let counter = Recorder<Int>()
        let log = Recorder<String>()
        let provider = countingProvider(delay: 0.3, counter: counter, plugins: [RecordingPlugin(tag: "p", log: log)])
        let responses = await withTaskGroup(of: Response?.self) { group in
            for _ in 0..<20 { group.addTask { try? await provider.request(.zen).get() } }
            return await group.reduce(into: [Response?]()) { $0.append($1) }
        }
        #expect(responses.count == 20)
        #expect(responses.allSatisfy { $0?.data == GitHub.zen.sampleData })
        #expect(Set(responses.compactMap { $0.map(ObjectIdentifier.init) }).count == 1, "one response, shared")
        #expect(counter.count == 1, "twenty identical requests, one call")
        #expect(log.values.filter { $0 == "willSend:p" }.count == 1)
        #expect(log.values.filter { $0 == "didReceive:p" }.count == 1)
        #expect(log.values.filter { $0 == "process:p" }.count == 20, "every waiter's result is processed")
        #expect(provider.inflightRequests.isEmpty)

        // Once finished, the same request makes a new call.
        _ = await provider.request(.zen)
        #expect(counter.count == 2)
    }

    @Test func aCancelledWaiterLeavesTheOthersServed() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 0.3, counter: counter)
        let leader = AsyncTask { await provider.request(.zen) }
        #expect(await waitUntil { provider.inflightRequests.values.first?.count == 1 })
        let follower = AsyncTask { await provider.request(.zen) }
        #expect(await waitUntil { provider.inflightRequests.values.first?.count == 2 })
        leader.cancel()
        #expect(isCancellation(await leader.value), "the cancelled caller gets the cancellation at once")
        #expect((try? await follower.value.get())?.data == GitHub.zen.sampleData, "the call went on for the other")
        #expect(counter.count == 1)
    }

    @Test func theLastWaiterLeavingCancelsTheCall() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 5, counter: counter)
        let start = Date()
        let first = AsyncTask { await provider.request(.zen) }
        let second = AsyncTask { await provider.request(.zen) }
        #expect(await waitUntil { provider.inflightRequests.values.first?.count == 2 })
        first.cancel()
        second.cancel()
        #expect(isCancellation(await first.value))
        #expect(isCancellation(await second.value))
        #expect(Date().timeIntervalSince(start) < 4, "ended by the cancellations, not by the 5 s stub delay")
        #expect(counter.count == 0, "the stub never answered")
        #expect(await waitUntil { provider.inflightRequests.isEmpty })
    }

    @Test func aTaskCancelledBeforeTheCallJoinsNothing() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 0.1, counter: counter)
        let task = AsyncTask {
            withUnsafeCurrentTask { $0?.cancel() }
            return await provider.request(.zen)
        }
        #expect(isCancellation(await task.value))
        #expect(provider.inflightRequests.isEmpty)
        #expect(counter.count == 0)
    }

    @Test func aCompletionHandlerJoiningAnAsyncCallIsCalledOnItsQueue() async {
        let counter = Recorder<Int>()
        let provider = countingProvider(delay: 0.3, counter: counter)
        let queue = DispatchQueue(label: "joiner")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let leader = AsyncTask { await provider.request(.zen) }
        #expect(await waitUntil { provider.inflightRequests.count == 1 })
        let onQueue = Recorder<Bool>()
        provider.request(.zen, callbackQueue: queue) { result in
            onQueue.append(DispatchQueue.getSpecific(key: key) == true && (try? result.get()) != nil)
        }
        #expect((try? await leader.value.get()) != nil)
        #expect(await waitUntil { onQueue.count == 1 })
        #expect(onQueue.values == [true])
        #expect(counter.count == 1)
    }

    @Test func immediateStubsFinishBeforeTheCallerWaits() async throws {
        let counter = Recorder<Int>()
        let provider = countingProvider(stubClosure: MoyaProvider.immediatelyStub, counter: counter)
        #expect(try await provider.request(.zen).get().data == GitHub.zen.sampleData)
        #expect(try await provider.request(.zen).get().data == GitHub.zen.sampleData)
        #expect(counter.count == 2, "an immediate stub is over before another caller could join")
        #expect(provider.inflightRequests.isEmpty)
    }
}
