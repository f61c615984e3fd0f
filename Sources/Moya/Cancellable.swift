import Foundation

/// Protocol to define the opaque type returned from a request.
///
/// Cancelling a request that has not completed ends it with
/// `.underlying(NSError(domain: NSURLErrorDomain, code: NSURLErrorCancelled), nil)`; its completion is still called.
public protocol Cancellable {

    /// A Boolean value stating whether a request is cancelled.
    var isCancelled: Bool { get }

    /// Cancels the represented request.
    func cancel()
}

/// A `Cancellable` that runs an action once, the first time it is cancelled. Thread-safe.
public final class CancellableToken: Cancellable, CustomDebugStringConvertible, @unchecked Sendable {
    private let lock = NSLock()
    private var cancelAction: (() -> Void)?
    private var cancelled = false
    private let debugText: () -> String

    /// Whether `cancel()` has been called.
    public var isCancelled: Bool { lock.withLock { cancelled } }

    /// Runs the action the first time; later calls do nothing.
    public func cancel() {
        let action: (() -> Void)? = lock.withLock {
            guard !cancelled else { return nil }
            cancelled = true
            defer { cancelAction = nil }
            return cancelAction
        }
        action?()
    }

    /// Creates a token running `action` on the first `cancel()`.
    ///
    /// - Parameter action: What cancelling does; run once, on the thread that calls `cancel()` first.
    public init(action: @escaping () -> Void) {
        self.cancelAction = action
        self.debugText = { "Empty Request" }
    }

    /// Creates a token for a request whose cURL form is its debug description.
    init(debugDescription: @escaping () -> String, action: @escaping () -> Void) {
        self.cancelAction = action
        self.debugText = debugDescription
    }

    /// `"Empty Request"` for a token made with ``init(action:)``; for a network request, its cURL command.
    public var debugDescription: String { debugText() }
}

/// The `Cancellable` returned by `MoyaProvider.request`: forwards to an inner cancellable that is set once the
/// request (or stub) has started. Cancelling before that is remembered and applied when the inner one is set.
final class CancellableWrapper: Cancellable, @unchecked Sendable {
    private let lock = NSLock()
    private var inner: Cancellable = SimpleCancellable()
    private var cancelled = false

    var innerCancellable: Cancellable {
        get { lock.withLock { inner } }
        set {
            let cancelNow: Bool = lock.withLock {
                inner = newValue
                return cancelled
            }
            if cancelNow { newValue.cancel() }
        }
    }

    var isCancelled: Bool { lock.withLock { cancelled } }

    func cancel() {
        let target: Cancellable? = lock.withLock {
            guard !cancelled else { return nil }
            cancelled = true
            return inner
        }
        target?.cancel()
    }
}

/// A cancellable that only records that it was cancelled.
final class SimpleCancellable: Cancellable, @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false
    var isCancelled: Bool { lock.withLock { cancelled } }
    func cancel() { lock.withLock { cancelled = true } }
}
