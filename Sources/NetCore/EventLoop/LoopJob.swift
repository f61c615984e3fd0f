/// A unit of work a loop runs: a closure, a task of the loop's executor, or an object's ``EventLoopJob/runOnLoop()``.
/// Closures from other threads come from `execute` (Sendable); local ones never leave the loop thread.
enum LoopJob: @unchecked Sendable {
    case closure(() -> Void)
    case task(UnownedJob)
    case object(any EventLoopJob)

    /// Runs the job, consuming it.
    @inline(__always)
    consuming func run(on executor: UnownedTaskExecutor) {
        switch consume self {
        case .closure(let body): body()
        case .task(let task): task.runSynchronously(on: executor)
        case .object(let object): object.runOnLoop()
        }
    }
}
