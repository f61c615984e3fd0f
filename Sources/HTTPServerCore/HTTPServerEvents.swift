import HTTPWire

/// What a server reports to its owner as it happens (the gateway counts these in its metrics). Each callback runs on
/// the loop thread that saw the event and must return at once: no blocking, no waiting.
package struct HTTPServerEvents: Sendable {
    /// Which way the bytes of a transfer cut for being too slow were going.
    package enum Direction: String, Sendable {
        /// A response the client took too slowly (``HTTPServerLimits/minSendRate``).
        case send
        /// A request body the client sent too slowly (``HTTPServerLimits/minReceiveRate``).
        case receive
    }

    /// A connection or HTTP/2 stream was cut for moving bytes below its minimum rate, over HTTP/1.1 or HTTP/2.
    package var minimumRateCut: (@Sendable (Direction, HTTPVersion) -> Void)?
    /// Accepting a connection failed for want of resources (`errno`: `EMFILE`, `ENFILE`, `ENOBUFS` or `ENOMEM`); the
    /// listener pauses and tries again (see ``NetCore/Listener``).
    package var acceptFailed: (@Sendable (Int32) -> Void)?

    package init(
        minimumRateCut: (@Sendable (Direction, HTTPVersion) -> Void)? = nil,
        acceptFailed: (@Sendable (Int32) -> Void)? = nil
    ) {
        self.minimumRateCut = minimumRateCut
        self.acceptFailed = acceptFailed
    }
}
