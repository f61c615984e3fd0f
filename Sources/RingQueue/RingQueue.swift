/// A first-in, first-out queue for one thread's hot path: appended at the tail and moved out at the head, in a ring
/// whose storage is kept from round to round. An element is neither copied in, copied out nor destroyed in place:
/// `Deque.append` copies its element into a closure, and an array emptied from the front is either shifted or
/// reversed (each swap a copy of two elements).
///
/// No storage until the first element: an idle owner (an HTTP/2 connection, say) holds none.
public struct RingQueue<Element>: ~Copyable {
    @usableFromInline var slots: UnsafeMutablePointer<Element>?
    /// Zero, or a power of two.
    @usableFromInline var capacity = 0
    @usableFromInline var head = 0
    @usableFromInline var queued = 0

    /// The capacity the first element allocates; a power of two.
    @usableFromInline let initialCapacity: Int

    /// An empty queue whose first element allocates room for `initialCapacity` (a power of two).
    public init(initialCapacity: Int = 16) {
        precondition(
            initialCapacity > 0 && initialCapacity & (initialCapacity - 1) == 0, "initialCapacity: a power of two")
        self.initialCapacity = initialCapacity
    }

    deinit {
        guard let slots else { return }
        for offset in 0..<queued { (slots + ((head &+ offset) & (capacity &- 1))).deinitialize(count: 1) }
        slots.deallocate()
    }

    /// How many elements are queued.
    @inlinable public var count: Int { queued }

    /// Whether nothing is queued.
    @inlinable public var isEmpty: Bool { queued == 0 }

    /// Queues `element` at the tail, moved in.
    @inlinable
    public mutating func append(_ element: consuming Element) {
        if queued == capacity { grow() }
        (slots.unsafelyUnwrapped + ((head &+ queued) & (capacity &- 1))).initialize(to: element)
        queued &+= 1
    }

    /// The element at the head, moved out; nil when the queue is empty.
    @inlinable
    public mutating func popFirst() -> Element? {
        guard queued > 0 else { return nil }
        let element = (slots.unsafelyUnwrapped + head).move()
        head = (head &+ 1) & (capacity &- 1)
        queued &-= 1
        return element
    }

    /// Doubles the ring (or makes the first one), its elements moved to the start of the new storage in order.
    @usableFromInline
    mutating func grow() {
        let newCapacity = capacity == 0 ? initialCapacity : capacity * 2
        let larger = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        if let slots {
            let firstRun = min(queued, capacity - head)
            larger.moveInitialize(from: slots + head, count: firstRun)
            (larger + firstRun).moveInitialize(from: slots, count: queued - firstRun)
            slots.deallocate()
        }
        slots = larger
        capacity = newCapacity
        head = 0
    }
}
