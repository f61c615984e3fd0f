import Locking
import NetCore

/// Runs one HTTP/1 connection's handlers one after another in a single long-lived task.
///
/// A keep-alive connection's requests then reuse that task, and the memory its async frames grew into, instead of
/// creating a task per request: a task starts with about 1 KB for its frames and takes every further slab from
/// `malloc`, so a deep handler (the gateway's Moya pipeline) paid a dozen allocations per request for its frames
/// alone. The connection hands the worker a request only while it waits for one; a request that arrives while it is
/// busy (pipelining) gets a task of its own. A worker left waiting for ``idleSweepLimit`` sweeps ends, so idle
/// connections hold no task.
///
/// Loop thread only.
final class HTTP1HandlerWorker {
    /// A request, what the handler decided about it on the loop, and the place its answer goes; made and used on the
    /// loop thread only.
    struct Job: @unchecked Sendable {
        let request: HTTPServerRequest
        let context: (any AnyObject & Sendable)?
        let slot: HTTP1ServerConnection.Slot
    }

    private typealias Waiter = UnsafeContinuation<Job?, Never>

    /// The running task; a slot run by the worker records it, so that cancelling the slot cancels the worker (which
    /// must then be retired). Cleared by the task itself as it ends: the task's closure holds the worker, and the
    /// last reference to a task must not go away with its own closure.
    private(set) var task: Task<Void, Never>?
    private var waiting: Waiter?
    private var retired = false
    private var idleSweeps = 0
    /// Receives each answer, on the loop thread.
    private let complete: (HTTP1ServerConnection.Slot, consuming HTTPServerResponse) -> Void
    /// Sweeps (about 250 ms apart) a worker may wait before it ends.
    static let idleSweepLimit = 4

    private init(complete: @escaping (HTTP1ServerConnection.Slot, consuming HTTPServerResponse) -> Void) {
        self.complete = complete
    }

    /// Whether the worker waits for a request (``run(_:)`` may be called).
    var isWaiting: Bool { waiting != nil }

    /// Starts a worker on `loop` with `first` as its first request. `complete` receives each answer, compressed by
    /// `compressor` when the server compresses, on the loop thread, in a job of its own; the worker already waits
    /// for the next request then.
    static func start(
        first: consuming Job, handler: any HTTPServerHandler, compressor: ResponseCompressor?, loop: EventLoop,
        complete: @escaping (HTTP1ServerConnection.Slot, consuming HTTPServerResponse) -> Void
    ) -> HTTP1HandlerWorker {
        let worker = HTTP1HandlerWorker(complete: complete)
        let shared = UncheckedSendable(worker)
        worker.task = Task(executorPreference: loop) {
            var next: Job? = first
            // Taken out of `next` (and the answer out of `pending`) so that neither is copied on its way.
            while let job = next.take() {
                let response = compressor.applied(
                    to: await handler.handle(job.request, context: job.context),
                    for: job.request)
                let slot = job.slot
                var pending: HTTPServerResponse? = consume response
                next = await withUnsafeContinuation { (continuation: Waiter) in
                    guard let response = pending.take() else { return }
                    // The task prefers the loop, so it is there now; a handler that moved elsewhere is brought back.
                    if loop.inEventLoop {
                        shared.value.wait(with: continuation, answering: slot, with: response, on: loop)
                    } else {
                        let answer = UncheckedSendable((slot, response))
                        loop.execute {
                            shared.value.wait(
                                with: continuation, answering: answer.value.0, with: answer.value.1, on: loop)
                        }
                    }
                }
            }
            loop.executeSoonOrNow { shared.value.task = nil }
        }
        return worker
    }

    /// Hands `job` to the waiting worker.
    func run(_ job: consuming Job) {
        guard let waiting else { return }
        self.waiting = nil
        idleSweeps = 0
        waiting.resume(returning: consume job)
    }

    /// Ends the worker: now when it waits, else once its current request is answered.
    func retire() {
        retired = true
        if let waiting {
            self.waiting = nil
            waiting.resume(returning: nil)
        }
    }

    /// Counts one sweep of the connection's timeouts; returns true when the worker has waited too long and should be
    /// retired.
    func sweep() -> Bool {
        guard isWaiting else { return false }
        idleSweeps += 1
        return idleSweeps >= Self.idleSweepLimit
    }

    /// Takes the worker's continuation (from inside `withUnsafeContinuation`) and delivers `response` for `slot`. Both
    /// happen in a later job, so the continuation is never resumed from inside that closure. A retired worker still
    /// delivers its answer (the connection drops it when closing, or sends it for a request whose body failed) and
    /// ends.
    private func wait(
        with continuation: Waiter, answering slot: HTTP1ServerConnection.Slot,
        with response: consuming HTTPServerResponse, on loop: EventLoop
    ) {
        let complete = self.complete
        guard !retired else {
            let response = response
            loop.executeLocally {
                complete(slot, response)
                continuation.resume(returning: nil)
            }
            return
        }
        waiting = continuation
        if answer == nil {
            // Held here rather than captured, so the job capturing only the worker costs no allocation.
            answer = (slot, consume response)
            loop.executeLocally(deliverAnswer)
        } else {
            let response = response
            loop.executeLocally { complete(slot, response) }
        }
    }

    /// The answer ``wait(with:answering:with:on:)`` holds for its job.
    private var answer: (HTTP1ServerConnection.Slot, HTTPServerResponse)?

    /// Hands the held answer to the connection.
    private func deliverAnswer() {
        guard let (slot, response) = answer.take() else { return }
        complete(slot, response)
    }
}
