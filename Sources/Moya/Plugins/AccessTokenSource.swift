/// Where ``AccessTokenSourcePlugin`` gets the tokens it sends: a source that obtains them itself, keeps one while it is
/// valid and renews it, and hands it to any number of requests at once (``RenewingAccessTokenSource``, or
/// ``OAuth2ClientCredentialsTokenSource`` for the OAuth 2.0 client-credentials grant).
///
/// Unlike ``AccessTokenRefreshPlugin``, which renews a token only after a `401` and sends a first request without one,
/// a source is asked before every attempt and may make the request wait: for a first token, or for a new one once the
/// last has expired.
public protocol AccessTokenSource: AnyObject, Sendable {
    /// A token to send now: the current one while it is valid, else the one being obtained (waiting for it).
    /// - Parameter deadline: the latest the caller waits; past it the call throws (a request's deadline). `nil`:
    ///   no limit.
    /// - Returns: the token, without a scheme (sent as `Authorization: <scheme> <token>`).
    /// - Throws: ``AccessTokenSourceError`` when no token can be had (the reason says why; it never holds a secret
    ///   or a token), `CancellationError` when the calling task is cancelled.
    func token(before deadline: ContinuousClock.Instant?) async throws -> String

    /// Reports that `token` was refused (an upstream answered `401` to a request that carried it): the source
    /// drops it if it is still the current one, so that the next ``token(before:)`` obtains another. A token that
    /// was already replaced is ignored, so any number of requests refused with the same token cause one renewal.
    /// - Parameter token: the token the refused request carried, as ``token(before:)`` returned it.
    func invalidate(_ token: String)
}

/// What a token fetch obtained: the token and how long it is valid.
public struct AccessTokenGrant: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The token itself (sent as `Authorization: <scheme> <token>`).
    public var token: String
    /// How long the token is valid from the moment the fetch started; `nil` until it is invalidated.
    public var lifetime: Duration?

    /// Creates a grant, as a ``RenewingAccessTokenSource/Fetch`` function returns it.
    /// - Parameters:
    ///   - token: the token itself; it must not be empty and may hold only visible ASCII characters (a header must
    ///     carry it), or the source refuses the grant as a failed fetch.
    ///   - lifetime: how long the token is valid from the moment the fetch started; `nil`: until it is invalidated.
    ///     A lifetime that is not positive is refused as a failed fetch.
    public init(token: String, lifetime: Duration?) {
        self.token = token
        self.lifetime = lifetime
    }

    /// Never shows the token.
    public var description: String {
        "AccessTokenGrant(token: [REDACTED], lifetime: \(lifetime.map { "\($0)" } ?? "none"))"
    }
    /// The same as ``description``: never shows the token.
    public var debugDescription: String { description }
}

/// Why an ``AccessTokenSource`` has no token to give. Its reason never holds a secret or a token.
public struct AccessTokenSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for logs (`token endpoint answered 503`, `the answer has no access_token`).
    public var reason: String
    /// Whether trying again at once may help (a connection failure, a timeout, a `5xx`), as opposed to an answer
    /// that will not change (a `400 invalid_client`).
    public var isTransient: Bool

    /// Creates an error.
    /// - Parameters:
    ///   - reason: what went wrong, for logs; it must hold no secret and no token (nor text from an answer that may
    ///     hold one).
    ///   - isTransient: whether trying again at once may help; `true` by default. A fetch round retries only
    ///     transient failures (``AccessTokenRenewalPolicy/attempts``).
    public init(_ reason: String, isTransient: Bool = true) {
        self.reason = reason
        self.isTransient = isTransient
    }

    /// `access token: <reason>`.
    public var description: String { "access token: \(reason)" }
}

/// What an access-token source did, for metrics and logs (see ``RenewingAccessTokenSource/init(policy:onEvent:fetch:)``).
public enum AccessTokenSourceEvent: Sendable, Hashable {
    /// A fetch obtained a token valid for `lifetime` (`nil`: until invalidated).
    case fetched(lifetime: Duration?)
    /// A fetch failed; `willRetry` when another attempt of the same round follows after a backoff.
    case fetchFailed(reason: String, willRetry: Bool)
    /// The current token was dropped after a request carrying it was refused (``AccessTokenSource/invalidate(_:)``).
    case invalidated
}

/// When a ``RenewingAccessTokenSource`` renews its token and how it retries a fetch that fails.
public struct AccessTokenRenewalPolicy: Sendable, Hashable {
    /// How long before the token expires a request starts its renewal in the background (requests go on with the
    /// current token meanwhile); at most half the token's lifetime. Default 60 s.
    public var renewBefore: Duration
    /// Attempts of one fetch round (1 = no retry); only failures that may pass are retried
    /// (``AccessTokenSourceError/isTransient``). Default 3.
    public var attempts: Int
    /// Pause before the second attempt of a round, doubling for each further one. Default 200 ms.
    public var backoff: Duration
    /// After a round failed, requests that need a new token fail at once with its error for this long (doubling
    /// with each round that fails in a row, up to ``maxFailurePause``) rather than each starting another round; the
    /// first request after it starts a new round, so the source recovers by itself. Default 1 s.
    public var failurePause: Duration
    /// The longest ``failurePause``. Default 30 s.
    public var maxFailurePause: Duration

    /// Creates a policy; every parameter has its property's default.
    /// - Parameters:
    ///   - renewBefore: how long before the token expires its renewal starts (``renewBefore``); 60 s by default.
    ///   - attempts: attempts of one fetch round, 1 for no retry (``attempts``); 3 by default.
    ///   - backoff: the pause before a round's second attempt, doubling for each further one (``backoff``); 200 ms by
    ///     default.
    ///   - failurePause: how long requests fail at once after a round failed (``failurePause``); 1 s by default.
    ///   - maxFailurePause: the longest that pause grows to (``maxFailurePause``); 30 s by default.
    public init(
        renewBefore: Duration = .seconds(60), attempts: Int = 3, backoff: Duration = .milliseconds(200),
        failurePause: Duration = .seconds(1), maxFailurePause: Duration = .seconds(30)
    ) {
        self.renewBefore = renewBefore
        self.attempts = attempts
        self.backoff = backoff
        self.failurePause = failurePause
        self.maxFailurePause = maxFailurePause
    }

    /// The pause before attempt `attempt + 1` of a round (`attempt` ≥ 1).
    func backoff(after attempt: Int) -> Duration {
        backoff * (1 << min(max(attempt - 1, 0), 16))
    }

    /// The pause after `failedRounds` rounds failed in a row (≥ 1).
    func failurePause(after failedRounds: Int) -> Duration {
        min(failurePause * (1 << min(max(failedRounds - 1, 0), 16)), max(maxFailurePause, failurePause))
    }
}
