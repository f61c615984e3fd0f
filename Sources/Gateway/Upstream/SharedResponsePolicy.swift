import HTTPWire

/// Which upstream responses are meant for one caller only. A coalesced flight still answers every waiter with its
/// response (the flight belongs to its group; callers with different identities never share a flight), and the
/// gateway logs each follower that got such a response.
package enum SharedResponsePolicy {
    /// Why a response with `headers` should not be shared between callers, or nil: it sets a cookie, is
    /// `Cache-Control: private` or `no-store`, or varies on everything (`Vary: *`).
    package static func unshareableReason(_ headers: HTTPFields) -> String? {
        if headers.contains(name: "Set-Cookie") { return "Set-Cookie" }
        for directive in headers.tokens(name: "Cache-Control") {
            let name = String(directive.prefix { $0 != "=" }.trimmingHTTPWhitespace())
            if name.equalsIgnoringASCIICase("private") { return "Cache-Control: private" }
            if name.equalsIgnoringASCIICase("no-store") { return "Cache-Control: no-store" }
        }
        if headers.containsToken("*", name: "Vary") { return "Vary: *" }
        return nil
    }
}
