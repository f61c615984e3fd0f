import Foundation
import HTTPClientCore
import Locking

// MARK: - Sharing identical in-flight requests from async callers

extension MoyaProvider {

    /// Sends a request for an async caller of a provider that tracks in-flight requests: an identical request already
    /// in flight is joined; otherwise this caller starts one that every later identical caller joins until it ends.
    ///
    /// The shared request runs in a task of its own, so it belongs to all its waiters: a waiter that is cancelled gets
    /// the cancellation error alone while the others keep waiting, and the last waiter to leave cancels the request.
    /// That task starts synchronously in the caller's context (no queue or thread hop before the request is sent) and
    /// prefers the HTTP client's event loop the caller runs on, so a server calling from its loop sends, receives and
    /// answers every waiter on that one thread. Each waiter's result passes through the plugins' `process` in its
    /// own task, as with `request(_:callbackQueue:progress:completion:)`.
    func requestSharingInflights(_ target: Target) async -> Result<Moya.Response, MoyaError> {
        let pluginTarget: TargetType = target
        if AsyncTask.isCancelled {
            return plugins.reduce(cancelledResult(pluginTarget)) { $1.process($0, target: pluginTarget) }
        }
        let endpoint = self.endpoint(target)
        let waiter = PendingResult<Result<Moya.Response, MoyaError>>()
        let joined = inflight.join(
            identity: EndpointIdentity(endpoint), endpoint: endpoint,
            completion: { waiter.deliver($0) }, queue: nil, defaultQueue: defaultCallbackQueue,
            isAsync: true)
        if !joined.isDuplicate {
            startSharedRequest(joined.call, target: target, pluginTarget: pluginTarget)
        }
        let token = UncheckedSendable(joined.token)
        let result = await withTaskCancellationHandler {
            await waiter.value()
        } onCancel: {
            token.value.cancel()
        }
        return plugins.reduce(result) { $1.process($0, target: pluginTarget) }
    }

    /// Runs `call`'s request in a task of its own and delivers the result to its waiters.
    private func startSharedRequest(_ call: InflightCall, target: Target, pluginTarget: TargetType) {
        let inflight = self.inflight
        let context = UncheckedSendable((target: target, pluginTarget: pluginTarget, endpoint: call.endpoint))
        let task = AsyncTask.immediate(executorPreference: session.client.currentLoop) { [self] in
            let result = await unprocessedResult(
                context.value.target, pluginTarget: context.value.pluginTarget,
                endpoint: context.value.endpoint)
            call.finish(result, viaQueues: true)
            inflight.remove(call)
        }
        call.operation.innerCancellable = CancellableToken { task.cancel() }
    }
}
