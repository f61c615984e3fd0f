/// `Retry-After` for a call the gateway refused on its own (an open circuit, a rate limit).
enum RetryAfter {
    /// The header's value for `wait`: whole seconds, rounded up, at least 1.
    static func value(_ wait: Duration) -> String {
        let (seconds, attoseconds) = wait.components
        return String(max(1, seconds + (attoseconds > 0 ? 1 : 0)))
    }
}
