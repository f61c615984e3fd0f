/// A one-shot timer on an ``EventLoop``. Cancel it from the loop thread.
package final class LoopTimer: @unchecked Sendable {
    let deadline: UInt64
    private var body: (() -> Void)?

    init(deadline: UInt64, body: @escaping () -> Void) {
        self.deadline = deadline
        self.body = body
    }

    /// Whether ``cancel()`` ran or the timer fired.
    package var isCancelled: Bool { body == nil }

    /// Stops the timer from firing; releases what its body captured.
    package func cancel() { body = nil }

    func fire() {
        let run = body
        body = nil
        run?()
    }
}

/// A binary min-heap of timers by deadline.
///
/// Cancelling a timer only marks it (``LoopTimer/cancel()`` has no access to the heap), so cancelled timers are
/// dropped in bulk: when the heap has doubled since it last held only live timers, it is rebuilt without the
/// cancelled ones. A loop that arms and cancels a timer per request (response timeouts) thus keeps about twice its live
/// timers, not every timer of the last timeout period. Deadlines sit next to the timers, so sifting reads no objects.
struct TimerHeap {
    private var items: [(deadline: UInt64, timer: LoopTimer)] = []
    /// The size at which the next insert first drops the cancelled timers.
    private var compactionThreshold = TimerHeap.minimumCompactionThreshold
    private static let minimumCompactionThreshold = 64

    /// How many timers the heap holds, cancelled ones included.
    var count: Int { items.count }

    mutating func nextDeadline() -> UInt64? {
        while let first = items.first, first.timer.isCancelled { _ = popFirst() }
        return items.first?.deadline
    }

    mutating func insert(_ timer: LoopTimer) {
        if items.count >= compactionThreshold { dropCancelled() }
        items.append((timer.deadline, timer))
        siftUp(items.count - 1)
    }

    mutating func popExpired(now: UInt64) -> LoopTimer? {
        guard let first = items.first, first.deadline <= now else { return nil }
        return popFirst()
    }

    private mutating func popFirst() -> LoopTimer? {
        guard !items.isEmpty else { return nil }
        let first = items[0].timer
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            siftDown(0)
        }
        return first
    }

    /// Rebuilds the heap from its live timers (Floyd's heap construction, linear).
    private mutating func dropCancelled() {
        items.removeAll { $0.timer.isCancelled }
        var index = items.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
        compactionThreshold = max(Self.minimumCompactionThreshold, items.count * 2)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = items.count
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < count, items[left].deadline < items[smallest].deadline { smallest = left }
            if right < count, items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
