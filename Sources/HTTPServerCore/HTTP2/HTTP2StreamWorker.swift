import Locking
import NetCore

/// Runs HTTP/2 streams' handlers, one after another, in a long-lived task that waits in its loop's pool between them.
///
/// The HTTP/2 counterpart of ``HTTP1HandlerWorker``: a stream's handler and response pump would otherwise get a new task
/// each, and a new task takes every frame slab past its first KiB from `malloc` (about 65 of the gateway's 96
/// allocations per proxied HTTP/2 request). A worker runs one stream's job, then offers itself to its loop's
/// ``HTTPServerLoopContext`` for the next stream of any connection on that loop, and ends when the pool declines it,
/// when it has waited idle for ``HTTP1HandlerWorker/idleSweepLimit`` sweeps, or when its job was cancelled (a reset
/// stream: a cancelled task cannot run another handler).
///
/// Loop thread only.
final class HTTP2StreamWorker {
    /// One stream's handler and response, run on the worker's task.
    typealias Job = @Sendable () async -> Void

    private typealias Waiter = UnsafeContinuation<Job?, Never>

    /// The running task. Cleared by the task itself as it ends: the task's closure holds the worker, and the last
    /// reference to a task must not go away with its own closure.
    private(set) var task: Task<Void, Never>?
    private var waiting: Waiter?
    /// Cancelled or retired: ends once its current job is over.
    private(set) var isRetired = false
    private var idleSweeps = 0
    /// Decides after each job whether the worker waits for another (see ``start(first:loop:park:)``). A property, not
    /// a capture: a tuple holding a closure, destructured in this nesting of closures, is miscompiled by Swift 6.3.1
    /// (an over-release; see `HTTP1HandlerWorker`'s `complete`).
    private let park: (HTTP2StreamWorker) -> Bool

    private init(park: @escaping (HTTP2StreamWorker) -> Bool) {
        self.park = park
    }

    /// Starts a worker on `loop` with `first` as its first job. After each job, `park` (on the loop thread) decides
    /// whether the worker waits for another (it returns true once it has put the worker in its pool) or ends (false,
    /// always for a retired worker).
    static func start(
        first: @escaping Job, loop: EventLoop,
        park: @escaping (HTTP2StreamWorker) -> Bool
    ) -> HTTP2StreamWorker {
        let worker = HTTP2StreamWorker(park: park)
        let shared = UncheckedSendable(worker)
        worker.task = Task(executorPreference: loop) {
            var next: Job? = first
            while let job = next {
                await job()
                next = await withUnsafeContinuation { (continuation: Waiter) in
                    loop.executeSoonOrNow { shared.value.wait(with: continuation, on: loop) }
                }
            }
            loop.executeSoonOrNow { shared.value.task = nil }
        }
        return worker
    }

    /// Hands `job` to the worker, which waits in its pool.
    func run(_ job: @escaping Job) {
        guard let waiting else { return }
        self.waiting = nil
        idleSweeps = 0
        waiting.resume(returning: job)
    }

    /// Cancels the job it runs (its stream was reset); the worker ends after it.
    func cancel() {
        isRetired = true
        task?.cancel()
    }

    /// Ends the worker: now when it waits, else once its current job is over.
    func retire() {
        isRetired = true
        if let waiting {
            self.waiting = nil
            waiting.resume(returning: nil)
        }
    }

    /// Counts one sweep while it waits in the pool; true when it has waited too long and should be retired.
    func sweep() -> Bool {
        guard waiting != nil else { return false }
        idleSweeps += 1
        return idleSweeps >= HTTP1HandlerWorker.idleSweepLimit
    }

    /// Takes the worker's continuation (from inside `withUnsafeContinuation`): waits in the pool if `park` takes it
    /// (it declines a retired worker), else ends. Resumed in a later job, never from inside that closure.
    private func wait(with continuation: Waiter, on loop: EventLoop) {
        guard park(self) else {
            isRetired = true
            loop.executeLocally { continuation.resume(returning: nil) }
            return
        }
        waiting = continuation
    }
}
