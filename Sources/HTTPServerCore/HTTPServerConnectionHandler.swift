import NetCore

/// What the loop context needs from the object serving one connection (HTTP/1.1, HTTP/2, or the selector that
/// picks between them).
protocol HTTPServerConnectionHandler: ConnectionDelegate {
    var connection: Connection { get }
    /// Checks the connection's deadlines; called by the loop's sweep.
    func checkTimeouts(now: UInt64)
    /// Stops taking new requests and closes once the ones in flight are answered.
    func beginDrain()
}
