import Foundation
import Locking

/// One request and the callers waiting for it. Every request has one; with `trackInflights` identical requests
/// join the same one.
final class InflightCall: @unchecked Sendable {
    private struct Waiter {
        let id: Int
        let completion: Moya.Completion
        let queue: DispatchQueue?
        /// An async caller's waiter: called wherever the result is delivered, never through a queue.
        let isAsync: Bool
    }

    let endpoint: Endpoint
    let identity: EndpointIdentity?
    /// Cancels the underlying work (request closure stage, stub or network task).
    let operation = CancellableWrapper()
    private let defaultQueue: DispatchQueue
    private let lock = NSLock()
    private var waiters: [Waiter] = []
    private var nextID = 0
    private var finished = false

    init(endpoint: Endpoint, identity: EndpointIdentity?, defaultQueue: DispatchQueue) {
        self.endpoint = endpoint
        self.identity = identity
        self.defaultQueue = defaultQueue
    }

    var completions: [Moya.Completion] { lock.withLock { waiters.map(\.completion) } }

    /// Adds a waiter and returns its token, or nil when the call has already finished.
    func addWaiter(_ completion: @escaping Moya.Completion, queue: DispatchQueue?, isAsync: Bool = false)
        -> Cancellable?
    {
        let id: Int? = lock.withLock {
            guard !finished else { return nil }
            nextID += 1
            waiters.append(Waiter(id: nextID, completion: completion, queue: queue, isAsync: isAsync))
            return nextID
        }
        guard let id else { return nil }
        return CancellableToken { [weak self] in self?.cancelWaiter(id) }
    }

    /// A waiter cancels: when others still wait it alone gets the cancellation error; the last one cancels the
    /// underlying work, which then completes it.
    private func cancelWaiter(_ id: Int) {
        let leaving: Waiter? = lock.withLock {
            guard !finished, let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            if waiters.count > 1 { return waiters.remove(at: index) }
            return nil
        }
        if let leaving {
            let cancelled = Result<Moya.Response, MoyaError>.failure(.underlying(MoyaProviderErrors.cancelled, nil))
            if leaving.isAsync {
                leaving.completion(cancelled)
                return
            }
            let box = UncheckedSendable(leaving.completion)
            (leaving.queue ?? defaultQueue).async { box.value(cancelled) }
        } else if lock.withLock({ !finished && waiters.contains { $0.id == id } }) {
            operation.cancel()
        }
    }

    /// Delivers the one result to every waiter, in the order they joined. Later calls do nothing.
    ///
    /// A call started through the callback API finishes on its starter's callback queue and, as in Moya, calls
    /// every completion there. A call started by an async caller finishes in its own task
    /// (`viaQueues: true`): completion-handler waiters then get the result on their callback queue (the provider's
    /// default one when they named none), async waiters where it is.
    func finish(_ result: Result<Moya.Response, MoyaError>, viaQueues: Bool = false) {
        let toNotify: [Waiter] = lock.withLock {
            guard !finished else { return [] }
            finished = true
            return waiters
        }
        let shared = UncheckedSendable(result)
        for waiter in toNotify {
            if viaQueues && !waiter.isAsync {
                let completion = UncheckedSendable(waiter.completion)
                (waiter.queue ?? defaultQueue).async { completion.value(shared.value) }
            } else {
                waiter.completion(result)
            }
        }
        lock.withLock { waiters.removeAll() }
    }

    var isFinished: Bool { lock.withLock { finished } }
}

/// The table of shared in-flight requests, keyed by what makes endpoints equal. Joining is one atomic
/// check-and-insert.
final class InflightRegistry: @unchecked Sendable {
    struct Joined {
        let call: InflightCall
        let token: Cancellable
        let isDuplicate: Bool
    }

    private let lock = NSLock()
    private var calls: [EndpointIdentity: InflightCall] = [:]

    func join(
        identity: EndpointIdentity, endpoint: Endpoint, completion: @escaping Moya.Completion,
        queue: DispatchQueue?, defaultQueue: DispatchQueue, isAsync: Bool = false
    ) -> Joined {
        lock.withLock {
            if let existing = calls[identity],
                let token = existing.addWaiter(completion, queue: queue, isAsync: isAsync)
            {
                return Joined(call: existing, token: token, isDuplicate: true)
            }
            let call = InflightCall(endpoint: endpoint, identity: identity, defaultQueue: defaultQueue)
            let token = call.addWaiter(completion, queue: queue, isAsync: isAsync) ?? SimpleCancellable()
            calls[identity] = call
            return Joined(call: call, token: token, isDuplicate: false)
        }
    }

    /// Removes `call` if it is still the entry for its identity.
    func remove(_ call: InflightCall) {
        guard let identity = call.identity else { return }
        lock.withLock {
            if calls[identity] === call { calls.removeValue(forKey: identity) }
        }
    }

    func snapshot() -> [Endpoint: [Moya.Completion]] {
        let current = lock.withLock { Array(calls.values) }
        var result: [Endpoint: [Moya.Completion]] = [:]
        for call in current { result[call.endpoint] = call.completions }
        return result
    }
}
