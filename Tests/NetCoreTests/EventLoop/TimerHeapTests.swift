import Testing

@testable import NetCore

@Suite struct TimerHeapTests {
    private func timer(_ deadline: UInt64, _ fired: @escaping (UInt64) -> Void = { _ in }) -> LoopTimer {
        LoopTimer(deadline: deadline) { fired(deadline) }
    }

    private func drain(_ heap: inout TimerHeap, until now: UInt64) -> [UInt64] {
        var order: [UInt64] = []
        while let expired = heap.popExpired(now: now) {
            if !expired.isCancelled { order.append(expired.deadline) }
        }
        return order
    }

    @Test func popsLiveTimersInDeadlineOrder() {
        var heap = TimerHeap()
        let deadlines: [UInt64] = [50, 10, 40, 10, 30, 20, 70, 60]
        for deadline in deadlines { heap.insert(timer(deadline)) }
        #expect(heap.nextDeadline() == 10)
        #expect(drain(&heap, until: 45) == [10, 10, 20, 30, 40])
        #expect(heap.nextDeadline() == 50)
        #expect(drain(&heap, until: 100) == [50, 60, 70])
        #expect(heap.nextDeadline() == nil)
    }

    @Test func cancelledTimersAreDroppedInBulkAndOrderHolds() {
        var heap = TimerHeap()
        var live: [UInt64] = []
        // A timer armed and cancelled per request, as a client's response timeouts are, with a few that stay live.
        for request in 0..<10_000 {
            let deadline = UInt64(1_000_000 + (request * 7919) % 100_000)
            let armed = timer(deadline)
            heap.insert(armed)
            if request % 1000 == 0 {
                live.append(deadline)
            } else {
                armed.cancel()
            }
            #expect(heap.count <= 2 * live.count + 64, "the heap holds about twice its live timers, not every timer")
        }
        #expect(heap.count < 100)
        #expect(drain(&heap, until: .max) == live.sorted())
    }

    @Test func aCancelledTimerAtTheTopDoesNotHoldBackTheNextDeadline() {
        var heap = TimerHeap()
        let first = timer(5)
        heap.insert(first)
        heap.insert(timer(9))
        first.cancel()
        #expect(heap.nextDeadline() == 9)
    }
}
