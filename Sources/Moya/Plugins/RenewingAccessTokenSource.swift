import Locking

/// An ``AccessTokenSource`` over a fetch function: it keeps the last token while it is valid and obtains a new one when
/// it is needed, one fetch at a time across all threads.
///
/// - **Single flight**: however many requests need a token at once (a first one, or after the last expired or was
///   invalidated), one fetch runs and every waiting request gets its result.
/// - **Proactive renewal**: once a token is within ``AccessTokenRenewalPolicy/renewBefore`` of its expiry, the next
///   request starts a fetch in the background and goes on with the current token, so requests do not wait at expiry
///   while traffic flows.
/// - **Waiting, bounded**: a request waits for a token no longer than its deadline (``token(before:)``) and leaves the
///   wait when its task is cancelled; the fetch goes on for the others.
/// - **Failures**: a fetch round makes up to ``AccessTokenRenewalPolicy/attempts`` attempts with a doubling backoff
///   (transient failures only); when the round fails, the requests waiting for it fail with its error, and for a
///   pause after it (doubling while rounds keep failing) requests that need a token fail at once instead of starting
///   another round. The first request after the pause starts one: the source recovers by itself once fetches work.
///   A token still valid when its renewal fails stays in use until it expires.
///
/// The fetch runs in a task of its own, not the calling request's, so a request that gives up does not cancel it.
public final class RenewingAccessTokenSource: AccessTokenSource {
    /// Obtains a token. Throw an ``AccessTokenSourceError`` to say whether the failure is transient; any other error
    /// counts as transient, described by its type.
    public typealias Fetch = @Sendable () async throws -> AccessTokenGrant
    /// Called for every fetch and invalidation, on the thread that did it (keep it short).
    public typealias EventHandler = @Sendable (AccessTokenSourceEvent) -> Void

    /// When the token is renewed and how a failing fetch is retried.
    public let policy: AccessTokenRenewalPolicy
    private let fetch: Fetch
    private let onEvent: EventHandler?
    private let state = Locked(State())

    /// - Parameters:
    ///   - policy: renewal margin, retries and pauses.
    ///   - onEvent: told of every fetch (success or failure) and invalidation, for metrics and logs.
    ///   - fetch: obtains a token; called by one task at a time.
    public init(
        policy: AccessTokenRenewalPolicy = AccessTokenRenewalPolicy(), onEvent: EventHandler? = nil,
        fetch: @escaping Fetch
    ) {
        self.policy = policy
        self.onEvent = onEvent
        self.fetch = fetch
    }

    /// How many fetch attempts have been made (each retry of a round counts).
    public var fetchCount: Int { state.withLock { $0.fetches } }

    /// Whether a token is held that has not expired (it may be due for renewal).
    public var hasValidToken: Bool {
        let now = ContinuousClock.now
        return state.withLock { $0.token?.isUsable(at: now) ?? false }
    }

    /// A token to send now: the current one while it is valid (starting its renewal in the background once it is
    /// due), else the one being fetched, waiting for it. A fetch starts when none is under way, unless a round
    /// failed within its pause: then the call throws that round's error at once.
    /// - Parameter deadline: the latest the caller waits; `nil` (the default): no limit.
    /// - Returns: the token of the last successful fetch.
    /// - Throws: ``AccessTokenSourceError``: the failed round's, or one saying that `deadline` passed first;
    ///   `CancellationError` when the calling task is cancelled while it waits.
    public func token(before deadline: ContinuousClock.Instant? = nil) async throws -> String {
        switch state.withLock({ look(&$0, now: .now) }) {
        case .token(let token): return token
        case .failure(let error): throw error
        case .wait(let id): return try await wait(id, until: deadline)
        }
    }

    /// Drops `token` if it is still the current one (and reports ``AccessTokenSourceEvent/invalidated``), so that
    /// the next ``token(before:)`` fetches another; a token already replaced is ignored.
    /// - Parameter token: the token a refused request carried.
    public func invalidate(_ token: String) {
        let dropped = state.withLock { state -> Bool in
            guard state.token?.value == token else { return false }
            state.token = nil
            return true
        }
        if dropped { onEvent?(.invalidated) }
    }

    // MARK: State

    private struct HeldToken {
        let value: String
        /// When a request starts the renewal; nil: never.
        let renewAt: ContinuousClock.Instant?
        /// When it may no longer be sent; nil: never.
        let expiresAt: ContinuousClock.Instant?

        func isUsable(at now: ContinuousClock.Instant) -> Bool { expiresAt.map { now < $0 } ?? true }
        func isDue(at now: ContinuousClock.Instant) -> Bool { renewAt.map { now >= $0 } ?? false }
    }

    private struct Waiter {
        let continuation: CheckedContinuation<String, any Error>
        var timer: AsyncTask<Void, Never>?
    }

    private struct State {
        var token: HeldToken?
        var fetching = false
        var waiters: [UInt64: Waiter] = [:]
        var lastWaiterID: UInt64 = 0
        /// Rounds failed in a row.
        var failedRounds = 0
        /// Until when requests without a token fail at once with `lastError`.
        var pausedUntil: ContinuousClock.Instant?
        var lastError: AccessTokenSourceError?
        var fetches = 0

        func isPaused(at now: ContinuousClock.Instant) -> Bool { pausedUntil.map { now < $0 } ?? false }
    }

    private enum Look {
        case token(String)
        case failure(AccessTokenSourceError)
        /// No token yet: wait, with this waiter id, for the fetch under way.
        case wait(UInt64)
    }

    /// What a request gets now; starts a fetch when one is needed (and not paused).
    private func look(_ state: inout State, now: ContinuousClock.Instant) -> Look {
        if let token = state.token, token.isUsable(at: now) {
            if token.isDue(at: now) && !state.fetching && !state.isPaused(at: now) { startFetch(&state) }
            return .token(token.value)
        }
        state.token = nil
        if !state.fetching {
            if state.isPaused(at: now), let error = state.lastError { return .failure(error) }
            startFetch(&state)
        }
        state.lastWaiterID &+= 1
        return .wait(state.lastWaiterID)
    }

    private func wait(_ id: UInt64, until deadline: ContinuousClock.Instant?) async throws -> String {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
                if AsyncTask.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                let now = ContinuousClock.now
                if let deadline, deadline <= now {
                    continuation.resume(throwing: Self.deadlineError)
                    return
                }
                // The fetch may have ended since the first look.
                let look = state.withLock { state -> Look in
                    if let token = state.token, token.isUsable(at: now) { return .token(token.value) }
                    if !state.fetching {
                        if state.isPaused(at: now), let error = state.lastError { return .failure(error) }
                        startFetch(&state)
                    }
                    state.waiters[id] = Waiter(continuation: continuation, timer: nil)
                    return .wait(id)
                }
                switch look {
                case .token(let token):
                    continuation.resume(returning: token)
                case .failure(let error):
                    continuation.resume(throwing: error)
                case .wait:
                    guard let deadline else { return }
                    let timer = AsyncTask { [weak self] in
                        try? await AsyncTask.sleep(until: deadline, clock: .continuous)
                        guard !AsyncTask.isCancelled else { return }
                        self?.expire(id)
                    }
                    let stillWaiting = state.withLock { state -> Bool in
                        guard state.waiters[id] != nil else { return false }
                        state.waiters[id]?.timer = timer
                        return true
                    }
                    if !stillWaiting { timer.cancel() }
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.timer?.cancel()
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// A waiter's deadline passed.
    private func expire(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(throwing: Self.deadlineError)
    }

    static let deadlineError = AccessTokenSourceError(
        "no token before the request's deadline (the token endpoint has not answered yet)")

    // MARK: Fetching

    /// Marks a round under way and runs it in a task of its own. Called with the lock held.
    private func startFetch(_ state: inout State) {
        state.fetching = true
        AsyncTask.detached { [self] in await runRound() }
    }

    /// One round: attempts with backoff until one succeeds or the policy says stop.
    private func runRound() async {
        var attempt = 0
        while true {
            attempt += 1
            let started = ContinuousClock.now
            state.withLock { $0.fetches += 1 }
            let outcome: Result<AccessTokenGrant, AccessTokenSourceError>
            do {
                outcome = .success(try Self.checked(await fetch()))
            } catch {
                outcome = .failure(Self.sourceError(error))
            }
            switch outcome {
            case .success(let grant):
                onEvent?(.fetched(lifetime: grant.lifetime))
                succeed(grant, started: started)
                return
            case .failure(let error):
                let retries = attempt < policy.attempts && error.isTransient
                onEvent?(.fetchFailed(reason: error.reason, willRetry: retries))
                guard retries else {
                    fail(error)
                    return
                }
                try? await AsyncTask.sleep(for: policy.backoff(after: attempt))
            }
        }
    }

    private func succeed(_ grant: AccessTokenGrant, started: ContinuousClock.Instant) {
        let expiresAt = grant.lifetime.map { started + $0 }
        let renewAt = grant.lifetime.map { started + $0 - min(policy.renewBefore, $0 / 2) }
        let waiters = state.withLock { state -> [Waiter] in
            state.token = HeldToken(value: grant.token, renewAt: renewAt, expiresAt: expiresAt)
            state.fetching = false
            state.failedRounds = 0
            state.pausedUntil = nil
            state.lastError = nil
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: grant.token)
        }
    }

    private func fail(_ error: AccessTokenSourceError) {
        let now = ContinuousClock.now
        let waiters = state.withLock { state -> [Waiter] in
            state.fetching = false
            state.failedRounds += 1
            state.pausedUntil = now + policy.failurePause(after: state.failedRounds)
            state.lastError = error
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(throwing: error)
        }
    }

    /// The grant, if its token can be sent in a header and its lifetime is positive.
    private static func checked(_ grant: AccessTokenGrant) throws -> AccessTokenGrant {
        guard !grant.token.isEmpty, grant.token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw AccessTokenSourceError("the token is empty or has characters a header cannot carry")
        }
        if let lifetime = grant.lifetime, lifetime <= .zero {
            throw AccessTokenSourceError("the token's lifetime is not positive")
        }
        return grant
    }

    private static func sourceError(_ error: any Error) -> AccessTokenSourceError {
        if let error = error as? AccessTokenSourceError { return error }
        return AccessTokenSourceError("the fetch failed (\(String(describing: type(of: error))))")
    }
}
