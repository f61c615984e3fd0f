/// A one-shot timer on an ``EventLoop``. Cancel it from the loop thread.
public final class LoopTimer: @unchecked Sendable {
    let deadline: UInt64
    private var body: (() -> Void)?

    init(deadline: UInt64, body: @escaping () -> Void) {
        self.deadline = deadline
        self.body = body
    }

    /// Whether ``cancel()`` ran or the timer fired.
    public var isCancelled: Bool { body == nil }

    /// Stops the timer from firing; releases what its body captured.
    public func cancel() { body = nil }

    func fire() {
        let run = body
        body = nil
        run?()
    }
}

/// A binary min-heap of timers by deadline.
struct TimerHeap {
    private var items: [LoopTimer] = []

    mutating func nextDeadline() -> UInt64? {
        while let first = items.first, first.isCancelled { _ = popFirst() }
        return items.first?.deadline
    }

    mutating func insert(_ timer: LoopTimer) {
        items.append(timer)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popExpired(now: UInt64) -> LoopTimer? {
        guard let first = items.first, first.deadline <= now else { return nil }
        return popFirst()
    }

    private mutating func popFirst() -> LoopTimer? {
        guard !items.isEmpty else { return nil }
        let first = items[0]
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < items.count, items[left].deadline < items[smallest].deadline { smallest = left }
                if right < items.count, items[right].deadline < items[smallest].deadline { smallest = right }
                if smallest == parent { break }
                items.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
