extension HTTPRequestHead {
    /// The protocols an HTTP/1.1 request asks to switch to (its `Upgrade` value, e.g. `websocket`), when it asks
    /// properly: `Upgrade` present and `upgrade` among the `Connection` options (RFC 9110 §7.8). Nil otherwise, and
    /// for HTTP/1.0, which has no upgrade.
    package var requestedUpgrade: String? {
        // Most requests have no `Upgrade` field: looked for by its token first (one byte per field).
        guard version >= .http1_1, headers.firstIndex(token: .upgrade) != nil,
            headers.containsToken("upgrade", in: .connection),
            let value = headers.first(.upgrade), !value.isEmpty
        else { return nil }
        return value
    }

    /// Whether the request asks to switch to `protocolName` (ignoring case), e.g. `websocket`.
    package func requestsUpgrade(to protocolName: String) -> Bool {
        guard requestedUpgrade != nil else { return false }
        return headers.tokens(name: "Upgrade").contains { String($0).equalsIgnoringASCIICase(protocolName) }
    }
}
