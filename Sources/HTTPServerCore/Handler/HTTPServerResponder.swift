import Locking
import NetCore

/// Where the answer goes to a request whose handler answers it later on the loop, with no task
/// (``HTTPServerDecision/answerLater(context:)``). Loop thread only.
package protocol HTTPServerResponder: AnyObject {
    /// Sends `response` in the request's place (compressed as the server compresses). Call it once, on the loop;
    /// later calls are ignored.
    func respond(_ response: consuming HTTPServerResponse)

    /// Told (on the loop) when the server gives up on the request before its answer: the client went away, the
    /// connection is closing, or the request's body failed (see ``HTTPServerRequest/bodyRejectionStatus``). The
    /// handler stops its work and still answers: a request whose body failed gets that answer with the server's
    /// status, any other's goes nowhere.
    var cancellation: (any HTTPServerCancellation)? { get set }

    /// Whether the server has given up on the request (see ``cancellation``).
    var isCancelled: Bool { get }
}

/// Work a handler started for a request answered later (see ``HTTPServerResponder/cancellation``).
package protocol HTTPServerCancellation: AnyObject {
    /// Stops the work; the handler answers all the same. Called on the loop, at most once.
    func cancel()
}

/// The responder of a request answered later whose answer a task awaits (``HTTPServerHandler/answer(later:context:)``):
/// the answer resumes the task.
final class HTTPServerContinuationResponder: HTTPServerResponder {
    private var continuation: UnsafeContinuation<HTTPServerResponse, Never>?
    var cancellation: (any HTTPServerCancellation)?
    private(set) var isCancelled = false

    private init(continuation: UnsafeContinuation<HTTPServerResponse, Never>) {
        self.continuation = continuation
    }

    func respond(_ response: consuming HTTPServerResponse) {
        cancellation = nil
        continuation.take()?.resume(returning: response)
    }

    /// Runs `handler`'s ``HTTPServerHandler/start(_:context:responder:)`` for `request` from a task on its loop and
    /// returns the answer; cancelling the task cancels the handler's work.
    static func answer(
        _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, handler: any HTTPServerHandler
    ) async -> HTTPServerResponse {
        let loop = request.loop
        // The responder once made, and whether the task was cancelled (before it was made, or after).
        let state = Locked<(responder: HTTPServerContinuationResponder?, cancelled: Bool)>((nil, false))
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                let responder = HTTPServerContinuationResponder(continuation: continuation)
                let start = UncheckedSendable((responder, request))
                loop.executeSoonOrNow {
                    let (responder, request) = start.value
                    handler.start(request, context: context, responder: responder)
                    let cancelledEarly = state.withLock { state in
                        state.responder = responder
                        return state.cancelled
                    }
                    if cancelledEarly { responder.cancel() }
                }
            }
        } onCancel: {
            let responder = state.withLock { state in
                state.cancelled = true
                return UncheckedSendable(state.responder)
            }
            loop.executeSoonOrNow { responder.value?.cancel() }
        }
    }

    /// Tells the handler's work that the server gave up on the request.
    private func cancel() {
        guard !isCancelled else { return }
        isCancelled = true
        cancellation?.cancel()
    }
}

extension HTTPServerHandler {
    /// The answer to a request ``decide(_:)`` answered with ``HTTPServerDecision/answerLater(context:)``, awaited
    /// from a task on the request's loop (a benchmark driving the handler): ``start(_:context:responder:)`` runs on the
    /// loop and its responder resumes the task; cancelling the task cancels the handler's work.
    package func answer(later request: HTTPServerRequest, context: (any AnyObject & Sendable)?) async
        -> HTTPServerResponse
    {
        await HTTPServerContinuationResponder.answer(request, context: context, handler: self)
    }
}
