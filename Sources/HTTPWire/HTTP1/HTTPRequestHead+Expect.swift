extension HTTPRequestHead {
    /// Whether the client sent `Expect: 100-continue` (case-insensitive) in an HTTP/1.1 or later request and waits
    /// for a `100 Continue` before sending its body. HTTP/1.0 requests never do (RFC 9110 §10.1.1).
    package var expectsContinue: Bool {
        guard version >= .http1_1 else { return false }
        return headers.containsToken("100-continue", in: .expect)
    }

    /// Whether the request carries an `Expect` header with anything other than `100-continue`, which a server may
    /// answer with 417.
    package var hasUnsupportedExpectation: Bool {
        headers.tokens(name: "Expect").contains { !String($0).equalsIgnoringASCIICase("100-continue") }
    }
}
