/// The head of an HTTP request: method, target, version and header fields.
package struct HTTPRequestHead: Sendable, Hashable {
    package var method: HTTPMethod
    /// The request target exactly as sent (origin form `/path?query` for normal requests).
    package var target: String
    package var version: HTTPVersion
    package var headers: HTTPFields

    package init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPFields = HTTPFields()
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The path part of the target (before `?`).
    package var path: Substring {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? Substring(target)
    }

    /// The query part of the target (after `?`), if any.
    package var query: Substring? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        return target[target.index(after: mark)...]
    }

    /// Whether the client asked for the connection to stay open after this exchange (HTTP/1.0 needs
    /// `Connection: keep-alive`; HTTP/1.1 stays open unless `Connection: close`).
    package var wantsKeepAlive: Bool {
        // Most requests have no `Connection` field (looked for by its token, one byte per field): the version's
        // default, with no token to read.
        guard headers.firstIndex(token: .connection) != nil else { return version >= .http1_1 }
        if headers.containsToken("close", in: .connection) { return false }
        if version >= .http1_1 { return true }
        return headers.containsToken("keep-alive", in: .connection)
    }
}

/// The head of an HTTP response: version, status, reason phrase and header fields.
package struct HTTPResponseHead: Sendable, Hashable {
    package var version: HTTPVersion
    package var status: Int
    package var reason: String
    package var headers: HTTPFields

    package init(
        status: Int, reason: String? = nil, version: HTTPVersion = .http1_1, headers: HTTPFields = HTTPFields()
    ) {
        self.version = version
        self.status = status
        self.reason = reason ?? HTTPStatus.reasonPhrase(for: status)
        self.headers = headers
    }

    /// The fields, moved out: this head keeps an empty list, so the list returned is its receiver's alone (edited in
    /// place, not copied on its first change).
    package mutating func takeHeaders() -> HTTPFields {
        let taken = headers
        headers = HTTPFields()
        return taken
    }

    /// Replaces the status, and the reason phrase with the new status's own (a `400 Bad Request` made a 408 reads
    /// `408 Request Timeout`, not `408 Bad Request`).
    package mutating func replaceStatus(with status: Int) {
        self.status = status
        reason = HTTPStatus.reasonPhrase(for: status)
    }

    /// Whether a response with this status never carries a body (1xx, 204, 304).
    package var statusForbidsBody: Bool {
        (100..<200).contains(status) || status == 204 || status == 304
    }
}
