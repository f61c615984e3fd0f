import Foundation
import Locking

/// The first value delivered by a callback, awaited without suspending when it is already there: the bridge from a
/// completion that may fire synchronously (a request closure, an immediate stub) or later, from any thread, to one
/// waiting task. Later deliveries are ignored.
final class PendingResult<Value>: @unchecked Sendable {
    private typealias Box = UncheckedSendable<Value>
    private let lock = NSLock()
    private var delivered: Box?
    private var continuation: CheckedContinuation<Box, Never>?

    /// Stores the value, or resumes the waiting task; later deliveries are ignored.
    func deliver(_ value: Value) {
        let box = Box(value)
        let waiting: CheckedContinuation<Box, Never>? = lock.withLock {
            guard delivered == nil else { return nil }
            delivered = box
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: box)
    }

    /// The delivered value, once there is one.
    func value() async -> Value {
        if let ready = lock.withLock({ delivered }) { return ready.value }
        let box = await withCheckedContinuation { (continuation: CheckedContinuation<Box, Never>) in
            let ready: Box? = lock.withLock {
                if let delivered { return delivered }
                self.continuation = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return box.value
    }
}
