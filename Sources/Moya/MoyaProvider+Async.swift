import Foundation
import Locking

// MARK: - async/await (AsyncMoya, from Moya's unreleased development branch, plus conveniences)

extension MoyaProvider {

    /// Sends a request and returns its result. Cancelling the calling Swift task cancels the request (the result is
    /// then `.failure(.underlying(NSURLErrorCancelled, nil))`). A task cancelled before the call sends nothing: the
    /// plugins' `didReceive` and `process` see the cancellation, as for a request cancelled before it started.
    ///
    /// When the provider has no `callbackQueue`, the pipeline runs with no queue hop: in the calling task, or, when
    /// the provider tracks in-flight requests, in a task shared by the identical requests in flight, which starts in
    /// the caller's context (each caller's plugins' `process` still runs in its own task). With a `callbackQueue` it
    /// goes through `request(_:callbackQueue:progress:completion:)` and the plugins run where that puts them.
    ///
    /// - Parameter target: The target to send.
    /// - Returns: The response, or the error, after the plugins' `process`.
    public func request(_ target: Target) async -> Result<Response, MoyaError> {
        if callbackQueue == nil {
            return trackInflights ? await requestSharingInflights(target) : await requestInCurrentTask(target)
        }
        let holder = CancellableHolder()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Response, MoyaError>, Never>) in
                let once = ResumeOnce(continuation)
                if AsyncTask.isCancelled {
                    // The network task starts detached from this one: without this check it could send the request
                    // before the cancellation reaches its token.
                    self.cancelCompletion(
                        { result in
                            once.resume(self.plugins.reduce(result) { $1.process($0, target: target) })
                        }, target: target)
                    return
                }
                let token = self.request(target, callbackQueue: nil, progress: nil) { result in
                    once.resume(result)
                }
                holder.set(token)
            }
        } onCancel: {
            holder.cancel()
        }
    }

    /// Sends a request and returns its response, throwing the `MoyaError` on failure.
    ///
    /// - Parameter target: The target to send.
    /// - Returns: The response, after the plugins' `process`.
    /// - Throws: The ``MoyaError`` the request failed with (a status the target's `validationType` rejects is
    ///   `.underlying(MoyaError.statusCode(response), response)`).
    public func response(_ target: Target) async throws(MoyaError) -> Response {
        try await request(target).get()
    }

    /// Sends a request and streams its progress: `.success` for each progress event, then the completed
    /// `ProgressResponse` (for stubs, which report no progress, that is the only element); `.failure` and the end
    /// of the stream on error. Ending the iteration (or cancelling the consuming task) cancels the request.
    ///
    /// - Parameter target: The target to send.
    /// - Returns: A stream of progress events that ends when the request does.
    public func requestWithProgress(_ target: Target) -> AsyncStream<Result<ProgressResponse, MoyaError>> {
        AsyncStream { continuation in
            let state = ProgressStreamState()
            let stream = UncheckedSendable(continuation)
            let token = self.request(
                target, callbackQueue: nil,
                progress: { progress in
                    if progress.completed { state.markCompleted() }
                    stream.value.yield(.success(progress))
                },
                completion: { result in
                    switch result {
                    case .success(let response):
                        if !state.isCompleted { stream.value.yield(.success(ProgressResponse(response: response))) }
                    case .failure(let error):
                        stream.value.yield(.failure(error))
                    }
                    stream.value.finish()
                })
            let cancellable = UncheckedSendable(token)
            continuation.onTermination = { _ in cancellable.value.cancel() }
        }
    }
}

extension AsyncSequence where Element == Result<ProgressResponse, MoyaError> {
    /// Calls `body` for every element.
    ///
    /// - Parameter body: Called with each element, in order.
    /// - Throws: What `body` or the sequence throws.
    public func forEach(_ body: (Element) async throws -> Void) async rethrows {
        for try await element in self {
            try await body(element)
        }
    }
}

/// Holds the token of a request started inside a continuation, so a cancellation arriving first is not lost.
final class CancellableHolder: @unchecked Sendable {
    private let lock = NSLock()
    private var token: Cancellable?
    private var cancelled = false

    func set(_ token: Cancellable) {
        let cancelNow = lock.withLock { () -> Bool in
            self.token = token
            return cancelled
        }
        if cancelNow { token.cancel() }
    }

    func cancel() {
        let token = lock.withLock { () -> Cancellable? in
            cancelled = true
            return self.token
        }
        token?.cancel()
    }
}

/// Resumes a continuation once.
final class ResumeOnce<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, Never>?

    init(_ continuation: CheckedContinuation<Value, Never>) { self.continuation = continuation }

    func resume(_ value: Value) {
        let continuation = lock.withLock { () -> CheckedContinuation<Value, Never>? in
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(returning: value)
    }
}

final class ProgressStreamState: @unchecked Sendable {
    private let lock = NSLock()
    private var completed = false
    func markCompleted() { lock.withLock { completed = true } }
    var isCompleted: Bool { lock.withLock { completed } }
}
