import Testing

@testable import RingQueue

/// ``RingQueue``: first in, first out across the ring's wrap and growth, elements moved in and out (never copied),
/// no storage until the first element, and every element it still holds released with it.
@Suite struct RingQueueTests {
    private final class Box {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    @Test func elementsComeOutInOrderAcrossTheWrapAndGrowth() {
        var queue = RingQueue<Int>(initialCapacity: 4)
        // Three in, two out: the head moves, so the next appends wrap around the ring before it grows.
        for number in 0..<3 { queue.append(number) }
        var out: [Int] = []
        for _ in 0..<2 { out.append(queue.popFirst() ?? -1) }
        for number in 3..<12 { queue.append(number) }
        let queued = queue.count
        #expect(queued == 10)
        while let number = queue.popFirst() { out.append(number) }
        #expect(out == Array(0..<12))
        let isEmpty = queue.isEmpty
        let nothingLeft = queue.popFirst() == nil
        #expect(isEmpty && nothingLeft)
        // Emptied, it serves again from wherever its head is.
        for number in 20..<25 { queue.append(number) }
        var again: [Int] = []
        while let number = queue.popFirst() { again.append(number) }
        #expect(again == Array(20..<25))
    }

    @Test func anEmptyQueueHoldsNoStorage() {
        var queue = RingQueue<Int>()
        let unallocated = queue.capacity == 0 && queue.slots == nil
        #expect(unallocated)
        queue.append(1)
        let firstCapacity = queue.capacity
        #expect(firstCapacity == 16)
        _ = queue.popFirst()
        let keptCapacity = queue.capacity
        #expect(keptCapacity == 16, "its storage is kept for the next element")
    }

    @Test func anElementIsMovedInAndOutNotCopied() {
        var queue = RingQueue<Box>(initialCapacity: 2)
        // Growth moves the elements too.
        for number in 0..<5 { queue.append(Box(number)) }
        var numbers: [Int] = []
        while var box = queue.popFirst() {
            #expect(isKnownUniquelyReferenced(&box), "the element popped is the queue's only one, not a copy")
            numbers.append(box.number)
        }
        #expect(numbers == Array(0..<5))
    }

    @Test func elementsLeftInTheQueueAreReleasedWithIt() {
        weak var left: Box?
        weak var taken: Box?
        do {
            var queue = RingQueue<Box>(initialCapacity: 2)
            for number in 0..<3 {
                let box = Box(number)
                if number == 0 { taken = box }
                if number == 2 { left = box }
                queue.append(box)
            }
            _ = queue.popFirst()
            #expect(taken == nil, "an element popped and dropped is released at once")
            #expect(left != nil)
        }
        #expect(left == nil, "an element still queued is released when the queue goes")
    }
}
