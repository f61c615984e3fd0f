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

/// A loop thread's first-in, first-out queue of jobs: appended at the tail and moved out at the head, in a ring whose
/// storage is kept from round to round. A job is neither copied out nor destroyed in place (an array's iteration
/// retains each job, and emptying it destroys each through the generic path: about 600 instructions for a round of
/// one job).
struct LoopJobQueue: ~Copyable {
    private var slots: UnsafeMutablePointer<LoopJob>
    /// A power of two.
    private var capacity: Int
    private var head = 0
    private(set) var count = 0

    init(capacity: Int = 64) {
        precondition(capacity > 0 && capacity & (capacity - 1) == 0, "a power of two")
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
    }

    deinit {
        for offset in 0..<count { (slots + ((head &+ offset) & (capacity &- 1))).deinitialize(count: 1) }
        slots.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    /// Queues `job` at the tail.
    mutating func append(_ job: consuming LoopJob) {
        if count == capacity { grow() }
        (slots + ((head &+ count) & (capacity &- 1))).initialize(to: job)
        count &+= 1
    }

    /// The job at the head, moved out; nil when the queue is empty.
    mutating func popFirst() -> LoopJob? {
        guard count > 0 else { return nil }
        let job = (slots + head).move()
        head = (head &+ 1) & (capacity &- 1)
        count &-= 1
        return job
    }

    /// Doubles the ring, its jobs moved to the start of the new storage in order.
    private mutating func grow() {
        let larger = UnsafeMutablePointer<LoopJob>.allocate(capacity: capacity * 2)
        let firstRun = min(count, capacity - head)
        larger.moveInitialize(from: slots + head, count: firstRun)
        (larger + firstRun).moveInitialize(from: slots, count: count - firstRun)
        slots.deallocate()
        slots = larger
        capacity *= 2
        head = 0
    }
}
