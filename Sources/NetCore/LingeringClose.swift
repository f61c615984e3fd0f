/// How long a connection that closes with its peer possibly still sending keeps reading (and dropping) what arrives
/// after it half-closed: see ``Connection/closeAfterFlush(lingering:)``. nginx's `lingering_timeout` and
/// `lingering_time`.
public struct LingeringClose: Sendable, Hashable {
    /// The connection closes once its peer has sent nothing for this long.
    public var idle: Duration
    /// The connection closes this long after it started lingering, whatever its peer still sends.
    public var limit: Duration

    public init(idle: Duration = .seconds(5), limit: Duration = .seconds(30)) {
        self.idle = idle
        self.limit = limit
    }
}
