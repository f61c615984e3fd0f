import CNetShims
import Synchronization

#if canImport(Glibc)
import Glibc
import Locking
import RingQueue
#endif

/// Something registered with an ``EventLoop`` that wants readiness events for its file descriptor.
///
/// Handlers live on the loop's thread: the loop calls them only from there.
package protocol EventLoopHandler: AnyObject {
    /// Called with the `epoll` event bits (`EPOLLIN`, `EPOLLOUT`, `EPOLLRDHUP`, `EPOLLHUP`, `EPOLLERR`).
    func handleEvents(_ events: UInt32)
}

/// Work an object does on its loop when its turn comes (see ``EventLoop/executeLocally(job:)``): queued as the object
/// itself, so deferring it allocates nothing, as resuming a task does not.
package protocol EventLoopJob: AnyObject {
    /// Runs on the loop thread, in a job of its own.
    func runOnLoop()
}

/// One epoll loop on its own thread: edge-triggered readiness, an eventfd for wake-ups, timers and a job queue.
///
/// A loop is also a `TaskExecutor`: `Task(executorPreference: loop)` keeps async work on the loop's thread, so a request
/// can travel from accept to response on one thread.
package final class EventLoop: @unchecked Sendable, TaskExecutor, CustomStringConvertible {
    private struct Registration {
        var handler: EventLoopHandler
        var generation: UInt32
    }

    /// Jobs submitted from other threads, drained by the loop.
    private let inbox = Locked<[LoopJob]>([])
    /// Set while the loop may be blocked in `epoll_wait`; producers write the eventfd only then.
    private let sleeping = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)

    private let epollFD: Int32
    private let wakeFD: Int32
    /// The loop thread's id, written once before the loop runs.
    private let threadID = Atomic<UInt>(0)
    package let index: Int
    /// Whether the loop started sending in batches through io_uring (false where io_uring is unavailable: an old
    /// kernel, a container's seccomp profile, `kernel.io_uring_disabled`). It stops if the kernel refuses such a send.
    package let sendsInBatches: Bool
    /// A read buffer shared by every connection of this loop (used only on the loop thread, only during a read).
    let readScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// Plaintext buffer for TLS reads, likewise shared.
    let plaintextScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// The `iovec` array of a `writev`, likewise shared.
    let iovecScratch = UnsafeMutablePointer<iovec>.allocate(capacity: EventLoop.iovecScratchCount)
    static let iovecScratchCount = 64

    // State below is touched only on the loop thread, and no mutation of it calls out while in progress (jobs and
    // handlers run after the access that fetched them ended): no access can overlap, so it skips the runtime's dynamic
    // exclusivity check (see `Connection`).
    /// Indexed by file descriptor (descriptors are small and dense), so an event costs no hashing.
    @exclusivity(unchecked) private var registrations: [Registration?] = []
    @exclusivity(unchecked) private var nextGeneration: UInt32 = 1
    @exclusivity(unchecked) private var localJobs = RingQueue<LoopJob>(initialCapacity: 64)
    /// The inbox's jobs of the round ``runJobs()`` is running.
    @exclusivity(unchecked) private var crossThreadJobs: [LoopJob] = []
    @exclusivity(unchecked) private var timers = TimerHeap()
    /// Connections with bytes queued in this round, flushed before the loop waits (see `Connection.write`).
    @exclusivity(unchecked) private var pendingFlushes: [Connection] = []
    /// The storage of buffers already sent, for ``outputBuffer(reservingCapacity:)``.
    @exclusivity(unchecked) private var spareOutputs: [[UInt8]] = []
    @exclusivity(unchecked) private var flushingNow: [Connection] = []
    /// Whether ``flushPending()`` is running.
    @exclusivity(unchecked) private var flushing = false
    /// Sends a round's queued bytes for many connections in one system call, when io_uring is available.
    @exclusivity(unchecked) private var batchSender: BatchSender?
    private var tickHandlers: [(id: Int, body: (UInt64) -> Void)] = []
    /// The monotonic time (``now()``) when the loop last woke from `epoll_wait`. Loop thread only.
    ///
    /// One clock read per round serves every per-request timestamp that coarse timeouts read (last activity, write
    /// progress, the `Date` header's second), as in nginx: at most one round stale, where a round is a few
    /// milliseconds at worst, against timeouts of seconds.
    package var roundTime: UInt64 { currentRoundTime }
    /// ``roundTime``'s storage. Read from other modules through the getter: a stored property read there directly would
    /// get the dynamic exclusivity check that `@exclusivity(unchecked)` leaves out here.
    @exclusivity(unchecked) private var currentRoundTime: UInt64 = EventLoop.now()
    private var nextTickHandlerID = 0

    /// Creates a loop and starts its thread.
    ///
    /// - Parameter batchedSends: send the writes of a round for all connections with one system call (io_uring) when
    ///   the kernel allows it (see ``sendsInBatches``); otherwise, and when false, one `sendmsg` per connection.
    package init(index: Int = 0, batchedSends: Bool = true) throws {
        self.index = index
        batchSender = batchedSends ? BatchSender() : nil
        sendsInBatches = batchSender != nil
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw SystemError.last("epoll_create1") }
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            close(epollFD)
            throw SystemError.last("eventfd")
        }
        guard
            cns_epoll_ctl(
                epollFD, EPOLL_CTL_ADD, wakeFD, cns_EPOLLIN() | cns_EPOLLET(),
                UInt64(UInt32(bitPattern: wakeFD))) == 0
        else {
            close(epollFD)
            close(wakeFD)
            throw SystemError.last("epoll_ctl")
        }
        try startThread()
    }

    deinit {
        readScratch.deallocate()
        plaintextScratch.deallocate()
        iovecScratch.deallocate()
    }

    package var description: String { "EventLoop(\(index))" }

    /// Whether the caller runs on this loop's thread.
    package var inEventLoop: Bool { threadID.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Runs `work` on the loop's thread, soon; from the loop itself it runs after the current event.
    package func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(.closure(work))
    }

    /// Runs `work` now if on the loop thread, else on the loop soon.
    package func executeSoonOrNow(_ work: @escaping @Sendable () -> Void) {
        if inEventLoop { work() } else { enqueue(.closure(work)) }
    }

    /// Enqueues non-Sendable work from the loop thread itself (e.g. deferring a callback to after the current event).
    package func executeLocally(_ work: @escaping () -> Void) {
        localJobs.append(.closure(work))
    }

    /// Runs `job` after the current event, from the loop thread itself, with no closure to allocate.
    package func executeLocally(job: any EventLoopJob) {
        localJobs.append(.object(job))
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        enqueue(.task(UnownedJob(job)))
    }

    private func enqueue(_ job: LoopJob) {
        if inEventLoop {
            localJobs.append(job)
            return
        }
        inbox.withLock { $0.append(job) }
        if sleeping.load(ordering: .acquiring) {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    // MARK: Registration

    /// Registers `fd` once, edge-triggered, for input, output and hang-up. Call on the loop thread.
    package func register(fd: Int32, handler: EventLoopHandler) throws {
        precondition(inEventLoop, "register must run on the loop thread")
        let generation = nextGeneration
        nextGeneration &+= 1
        let events = cns_EPOLLIN() | cns_EPOLLOUT() | cns_EPOLLRDHUP() | cns_EPOLLET()
        let data = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
        guard cns_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, events, data) == 0 else {
            throw SystemError.last("epoll_ctl(ADD)")
        }
        store(Registration(handler: handler, generation: generation), for: fd)
    }

    /// Registers a listening socket for input only, edge-triggered.
    package func registerListener(fd: Int32, handler: EventLoopHandler) throws {
        precondition(inEventLoop, "register must run on the loop thread")
        let generation = nextGeneration
        nextGeneration &+= 1
        let data = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
        guard cns_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, cns_EPOLLIN() | cns_EPOLLET(), data) == 0 else {
            throw SystemError.last("epoll_ctl(ADD)")
        }
        store(Registration(handler: handler, generation: generation), for: fd)
    }

    private func store(_ registration: Registration, for fd: Int32) {
        let index = Int(fd)
        if index >= registrations.count {
            registrations.append(
                contentsOf: repeatElement(nil, count: max(index + 1, registrations.count * 2) - registrations.count))
        }
        registrations[index] = registration
    }

    /// Removes `fd`; call before closing it.
    package func deregister(fd: Int32) {
        let index = Int(fd)
        guard index >= 0, index < registrations.count, registrations[index] != nil else { return }
        registrations[index] = nil
        _ = cns_epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, 0, 0)
    }

    // MARK: Timers

    /// Calls `body` on the loop thread at `deadline` (monotonic nanoseconds, see ``EventLoop/now()``).
    @discardableResult
    package func schedule(atNanoseconds deadline: UInt64, _ body: @escaping () -> Void) -> LoopTimer {
        let timer = LoopTimer(deadline: deadline, body: body)
        if inEventLoop {
            timers.insert(timer)
        } else {
            let box = UncheckedSendable(timer)
            execute { [self] in timers.insert(box.value) }
        }
        return timer
    }

    /// Calls `body` on the loop thread after `delay`.
    @discardableResult
    package func schedule(after delay: Duration, _ body: @escaping () -> Void) -> LoopTimer {
        schedule(atNanoseconds: EventLoop.now() &+ delay.nanoseconds, body)
    }

    /// Adds a handler called about every 250 ms with the current time, for coarse deadline sweeps
    /// (connection timeouts) that cost nothing per request. Returns an id for ``removeTickHandler(_:)``.
    package func addTickHandler(_ body: @escaping (UInt64) -> Void) -> Int {
        precondition(inEventLoop, "tick handlers are added on the loop thread")
        nextTickHandlerID += 1
        tickHandlers.append((nextTickHandlerID, body))
        if tickHandlers.count == 1 { scheduleTick() }
        return nextTickHandlerID
    }

    package func removeTickHandler(_ id: Int) {
        tickHandlers.removeAll { $0.id == id }
    }

    private func scheduleTick() {
        schedule(after: .milliseconds(250)) { [self] in
            guard !tickHandlers.isEmpty else { return }
            let now = EventLoop.now()
            for handler in tickHandlers { handler.body(now) }
            scheduleTick()
        }
    }

    /// Monotonic clock in nanoseconds.
    package static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// An empty buffer with room for `capacity` bytes, to assemble bytes in for a connection's write: the storage of
    /// the last buffer a connection of this loop finished sending when it has the room, else a new one. Loop thread
    /// only.
    ///
    /// Every exchange writes a head (or a round of frames), so a busy loop allocates these once rather than once per
    /// exchange; the buffers are the loop's, not a connection's, so an idle connection keeps none. A kept buffer that
    /// another holder still shares (a body queued as it is) is copied when it is emptied here, which costs what a new
    /// buffer would.
    package func outputBuffer(reservingCapacity capacity: Int) -> [UInt8] {
        if let last = spareOutputs.last, last.capacity >= capacity {
            var buffer = spareOutputs.removeLast()
            buffer.removeAll(keepingCapacity: true)
            return buffer
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(capacity)
        return buffer
    }

    /// Keeps `sent`'s storage for ``outputBuffer(reservingCapacity:)``, up to ``spareOutputLimit`` buffers of at most
    /// ``spareOutputCapacityLimit`` bytes each (a larger one is freed). Loop thread only.
    func keepForReuse(_ sent: consuming [UInt8]) {
        guard sent.capacity <= Self.spareOutputCapacityLimit, spareOutputs.count < Self.spareOutputLimit else { return }
        spareOutputs.append(sent)
    }

    /// How many sent buffers a loop keeps: as many as the exchanges of one busy round write, about.
    static let spareOutputLimit = 64
    /// The largest sent buffer a loop keeps (a head with a small body); at most 256 KiB kept per loop.
    static let spareOutputCapacityLimit = 4 * 1024

    /// Has `connection` flushed before the loop next waits. Loop thread only.
    func flushBeforeWaiting(_ connection: Connection) {
        pendingFlushes.append(connection)
        if pendingFlushes.count >= (batchSender?.capacity ?? EventLoop.flushBatch) && !flushing { flushPending() }
    }

    /// Most connections whose writes wait for the end of a round when each is sent with its own `sendmsg`: a peer is
    /// still woken about once per batch, and the first answer of a busy round does not wait for the whole round
    /// (measured: 8 keeps the gateway's gain and hello-server's pace against nginx; 1, sending at once, costs the
    /// gateway about 40 %). With batched sends a batch is what one io_uring call carries (64): measured against 8,
    /// 5 % more proxied requests per second and lower p90/p99 latency at 10 and 50 connections.
    static let flushBatch = 8

    /// Sends what this round queued, connection after connection; arrays keep their storage.
    private func flushPending() {
        // Not entered again from a connection told its result (it may write again): what it queues waits until the
        // batch at hand is done and is sent by this same loop, so one batch's scratch and completions are never mixed
        // with another's.
        flushing = true
        defer { flushing = false }
        while !pendingFlushes.isEmpty {
            swap(&pendingFlushes, &flushingNow)
            if flushingNow.count > 1, let batchSender {
                flushBatched(with: batchSender)
            } else {
                // Each connection is used as the array holds it (nothing changes the array meanwhile: a connection
                // that writes again queues itself in `pendingFlushes`), without retaining the array, or each
                // connection around its flush.
                for index in flushingNow.indices {
                    Unmanaged.passUnretained(flushingNow[index])._withUnsafeGuaranteedRef { $0.flushDeferred() }
                }
            }
            flushingNow.removeAll(keepingCapacity: true)
        }
    }

    /// Sends for every connection in ``flushingNow`` with one system call (io_uring): a peer on this CPU (an upstream
    /// beside the gateway) that the first send wakes then finds every request of the round waiting instead of being
    /// woken, and switched to, once per send.
    private func flushBatched(with sender: BatchSender) {
        let connections = flushingNow
        var start = 0
        while start < connections.count {
            guard batchSender != nil else {
                // The ring was given up on: the rest go one `sendmsg` each.
                for index in start..<connections.count { connections[index].flushDeferred() }
                return
            }
            let end = min(connections.count, start + sender.capacity)
            var queued = 0
            for index in start..<end {
                let slot = index - start
                let connection = connections[index]
                sender.queued[slot] = false
                sender.sent[slot] = false
                guard connection.prepareBatchedFlush(sender.messages + slot, iovecs: sender.iovecs(for: slot)) else {
                    continue
                }
                if sender.queue(fd: connection.fd, message: sender.messages + slot, tag: UInt64(slot)) {
                    sender.queued[slot] = true
                    queued += 1
                } else {
                    connection.finishBatchedFlush(result: -EINTR)
                }
            }
            if queued > 0 { completeBatch(connections[start..<end], queued: queued, sender: sender) }
            start = end
        }
    }

    /// Submits the sends queued for `batch` (slot `n` is `batch`'s `n`th connection) and hands each connection its
    /// result.
    private func completeBatch(_ batch: ArraySlice<Connection>, queued: Int, sender: BatchSender) {
        let (consumed, submitted) = sender.submit()
        let allCompleted = submitted && sender.waitForCompletions(queued)
        var tag: UInt64 = 0
        var result: Int32 = 0
        while sender.takeCompletion(tag: &tag, result: &result) {
            let slot = Int(tag)
            sender.sent[slot] = true
            // A kernel that cannot send this way says so for every send: the loop stops using the ring.
            if BatchSender.refusesSending(result) { batchSender = nil }
            batch[batch.startIndex + slot].finishBatchedFlush(result: result)
        }
        guard !allCompleted else { return }
        // The ring failed: it is not used again. Sends the kernel never took go out one `sendmsg` each; a send it took
        // but did not report may or may not have left, so its connection cannot go on (sending again could repeat
        // bytes): it closes.
        batchSender = nil
        var position = 0
        for slot in 0..<batch.count where sender.queued[slot] {
            defer { position += 1 }
            if sender.sent[slot] { continue }
            if position < consumed {
                batch[batch.startIndex + slot].close(error: SystemError("io_uring", errno: EIO))
            } else {
                batch[batch.startIndex + slot].finishBatchedFlush(result: -EINTR)
            }
        }
    }

    /// Breaks this loop's io_uring, as a kernel refusing its calls would (for tests of the fallback). Loop thread only.
    func breakBatchedSendsForTesting() {
        batchSender?.breakRing()
    }

    // MARK: Running

    /// Asks the loop to finish its queued work and exit its thread.
    package func shutdown() {
        stopRequested.store(true, ordering: .releasing)
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    private func startThread() throws {
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { raw in
                guard let raw else { return nil }
                let loop = Unmanaged<EventLoop>.fromOpaque(raw).takeRetainedValue()
                loop.run()
                return nil
            }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            throw SystemError("pthread_create", errno: rc)
        }
        pthread_detach(thread)
        // Wait until the thread has recorded its id so `inEventLoop` is right from the start.
        while threadID.load(ordering: .acquiring) == 0 { sched_yield() }
    }

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        let capacity = 256
        let stride = cns_epoll_event_size()
        let events = UnsafeMutableRawPointer.allocate(byteCount: stride * capacity, alignment: 8)
        defer { events.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            runJobs()
            flushPending()
            var timeout: Int32 = -1
            if !localJobs.isEmpty {
                timeout = 0
            } else if let next = timers.nextDeadline() {
                let now = EventLoop.now()
                timeout = next <= now ? 0 : Int32(clamping: (next - now + 999_999) / 1_000_000)
            }
            if timeout != 0 {
                sleeping.store(true, ordering: .releasing)
                // A job may have arrived between draining and announcing sleep.
                if inbox.withLock({ !$0.isEmpty }) { timeout = 0 }
            }
            let count = epoll_wait(epollFD, events.assumingMemoryBound(to: epoll_event.self), Int32(capacity), timeout)
            sleeping.store(false, ordering: .releasing)
            currentRoundTime = EventLoop.now()
            if count > 0 {
                for i in 0..<Int(count) {
                    let event = (events + i * stride).assumingMemoryBound(to: epoll_event.self)
                    let data = cns_epoll_event_data(event)
                    let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
                    if fd == wakeFD {
                        var value: UInt64 = 0
                        _ = read(wakeFD, &value, 8)
                        continue
                    }
                    guard fd >= 0, Int(fd) < registrations.count, let registration = registrations[Int(fd)],
                        registration.generation == UInt32(truncatingIfNeeded: data >> 32)
                    else { continue }
                    registration.handler.handleEvents(cns_epoll_event_events(event))
                }
            }
            runTimers()
        }
        runJobs()
        flushPending()
        close(epollFD)
        close(wakeFD)
    }

    /// Runs queued jobs in rounds: each round runs the inbox's jobs (their array swapped out, its storage kept), then
    /// the local jobs queued before the round began; jobs these queue run in the next round. A round allocates
    /// nothing.
    private func runJobs() {
        let executor = asUnownedTaskExecutor()
        var rounds = 0
        while rounds < 64 {
            rounds += 1
            inbox.withLock { inbox in
                guard !inbox.isEmpty else { return }
                swap(&crossThreadJobs, &inbox)
            }
            var local = localJobs.count
            if crossThreadJobs.isEmpty && local == 0 { return }
            if !crossThreadJobs.isEmpty {
                for job in crossThreadJobs { job.run(on: executor) }
                crossThreadJobs.removeAll(keepingCapacity: true)
            }
            while local > 0, let job = localJobs.popFirst() {
                local -= 1
                job.run(on: executor)
            }
        }
    }

    private func runTimers() {
        guard timers.nextDeadline() != nil else { return }
        let now = EventLoop.now()
        while let timer = timers.popExpired(now: now) {
            if !timer.isCancelled { timer.fire() }
        }
    }
}
