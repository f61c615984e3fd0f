import HTTPWire

extension HTTPClient {
    /// How long a connection may stay idle and still be reused when its server answered `Keep-Alive: value`: the
    /// `timeout=` seconds less one second, or less half of them when they are two or fewer (`nil` without a timeout).
    ///
    /// A request sent just as the server closes an idle connection crosses the close on the wire; an idempotent one is
    /// retried on a new connection, a POST cannot be. Staying clear of the server's limit avoids the race (servers
    /// such as Node.js and Apache say their limit; nginx and Go do not).
    package static func keepAliveReuseLimit(_ value: String) -> Duration? {
        for parameter in value.split(separator: ",") {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingHTTPWhitespace().lowercased() == "timeout",
                let seconds = Int64(pair[1].trimmingHTTPWhitespace()), seconds >= 0, seconds < 1 << 31
            else { continue }
            let timeout = Duration.seconds(seconds)
            return timeout - min(.seconds(1), timeout / 2)
        }
        return nil
    }

    /// Whether the value of a `Connection` field, a comma-separated list, has the element `close` (ignoring ASCII case
    /// and the optional whitespace around elements, RFC 9110 §7.6.1), read from its bytes without splitting them.
    static func connectionListHasClose(_ value: UnsafeRawBufferPointer) -> Bool {
        ("close" as StaticString).withUTF8Buffer { HTTPFields.list(value, contains: UnsafeRawBufferPointer($0)) }
    }
}
