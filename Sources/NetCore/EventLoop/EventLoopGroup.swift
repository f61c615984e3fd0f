import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A fixed set of event loops, one per core by default, handed out round-robin.
package final class EventLoopGroup: Sendable {
    package let loops: [EventLoop]
    private let cursor = Atomic<Int>(0)

    /// Starts `threads` loops; 0 means one per online core. `batchedSends`: see ``EventLoop/init(index:batchedSends:)``.
    package init(threads: Int = 0, batchedSends: Bool = true) throws {
        let count = threads > 0 ? threads : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        var loops: [EventLoop] = []
        for index in 0..<count { loops.append(try EventLoop(index: index, batchedSends: batchedSends)) }
        self.loops = loops
    }

    /// The next loop, round-robin.
    package func next() -> EventLoop {
        let value = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[abs(value % loops.count)]
    }

    /// The loop the caller runs on, if it is one of this group's; else the next one.
    package func currentOrNext() -> EventLoop {
        loops.first { $0.inEventLoop } ?? next()
    }

    /// Stops every loop.
    package func shutdown() {
        for loop in loops { loop.shutdown() }
    }
}
