import HTTPServerCore

/// `server.limits`: the HTTP server's limits as the file sets them (`max_header_bytes`, `max_headers`,
/// `max_body_bytes`, the timeouts, `max_connections`, the minimum rates, `max_requests_per_connection`), and the
/// drain's timeout.
///
/// The server's own ``HTTPServerLimits`` holds the limits and declares their defaults, once; a field is read and set
/// through it by its name (`limits.maxHeaderBytes`). The file's `max_requests_per_connection: 0` (no limit) is stored
/// as `Int.max`. A client that leaves before its answer abandons the upstream call (nginx's
/// `proxy_ignore_client_abort off`), which the server does not do by default.
@dynamicMemberLookup
package struct LimitsConfig: Sendable, Equatable {
    /// The limits the server enforces: its defaults, with the file's values over them.
    package var server: HTTPServerLimits = {
        var limits = HTTPServerLimits()
        limits.abandonsRequestsOnClientEOF = true
        return limits
    }()
    /// `drain_timeout`: how long a drain (SIGTERM) waits for requests in flight. Default 30 s.
    package var drainTimeout: Duration = .seconds(30)

    package init() {}

    /// One of the server's limits, by name.
    package subscript<Value>(dynamicMember keyPath: WritableKeyPath<HTTPServerLimits, Value>) -> Value {
        get { server[keyPath: keyPath] }
        set { server[keyPath: keyPath] = newValue }
    }
}
