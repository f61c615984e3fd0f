import RingQueue
import Testing

@testable import NetCore

/// The loop's jobs in its ring (`RingQueue<LoopJob>`, as `EventLoop` keeps them): run in order across the ring's wrap
/// and growth, closures and objects alike, and every job it still holds released with it.
@Suite struct LoopJobRingTests {
    /// A job that records its number when run.
    private final class Numbered: EventLoopJob {
        let number: Int
        let ran: Ran
        init(_ number: Int, ran: Ran) {
            self.number = number
            self.ran = ran
        }
        func runOnLoop() { ran.numbers.append(number) }
    }

    private final class Ran {
        var numbers: [Int] = []
    }

    private static func drain(_ queue: inout RingQueue<LoopJob>) {
        while let job = queue.popFirst() { job.run(on: UnownedTaskExecutor(ordinary: NoExecutor())) }
    }

    private final class NoExecutor: TaskExecutor {
        func enqueue(_ job: consuming ExecutorJob) { Issue.record("no task runs here") }
    }

    @Test func jobsRunInOrderAcrossTheWrapAndGrowth() {
        let ran = Ran()
        var queue = RingQueue<LoopJob>(initialCapacity: 4)
        var closureRuns = 0
        // Three in, two out: the head moves, so the next appends wrap around the ring before it grows.
        for number in 0..<3 { queue.append(.object(Numbered(number, ran: ran))) }
        for _ in 0..<2 { queue.popFirst()?.run(on: UnownedTaskExecutor(ordinary: NoExecutor())) }
        queue.append(.closure { closureRuns += 1 })
        for number in 3..<12 { queue.append(.object(Numbered(number, ran: ran))) }
        let queued = queue.count
        #expect(queued == 11)
        Self.drain(&queue)
        #expect(ran.numbers == Array(0..<12))
        #expect(closureRuns == 1)
        let isEmpty = queue.isEmpty
        let nothingLeft = queue.popFirst() == nil
        #expect(isEmpty && nothingLeft)
    }

    @Test func jobsLeftInTheQueueAreReleasedWithIt() {
        weak var left: Numbered?
        do {
            var queue = RingQueue<LoopJob>(initialCapacity: 2)
            let ran = Ran()
            for number in 0..<3 {
                let job = Numbered(number, ran: ran)
                if number == 2 { left = job }
                queue.append(.object(job))
            }
            _ = queue.popFirst()
            #expect(left != nil)
        }
        #expect(left == nil, "a job still queued is released when the queue goes")
    }
}
