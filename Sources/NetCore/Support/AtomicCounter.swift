import Synchronization

/// A shareable atomic integer, for counts several loops update (open connections, requests).
package final class AtomicCounter: Sendable {
    private let storage: Atomic<Int>

    package init(_ value: Int = 0) { storage = Atomic(value) }

    package var value: Int { storage.load(ordering: .relaxed) }

    /// Adds `delta` and returns the new value.
    @discardableResult
    package func add(_ delta: Int) -> Int { storage.wrappingAdd(delta, ordering: .relaxed).newValue }
}
