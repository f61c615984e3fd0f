import Synchronization

/// A shareable atomic integer, for counts several loops update (open connections, requests).
public final class AtomicCounter: Sendable {
    private let storage: Atomic<Int>

    public init(_ value: Int = 0) { storage = Atomic(value) }

    public var value: Int { storage.load(ordering: .relaxed) }

    /// Adds `delta` and returns the new value.
    @discardableResult
    public func add(_ delta: Int) -> Int { storage.wrappingAdd(delta, ordering: .relaxed).newValue }
}
