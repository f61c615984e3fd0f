/// How long a connection that closes with its peer possibly still sending keeps reading (and dropping) what arrives
/// after it half-closed: see ``Connection/closeAfterFlush(lingering:)``. nginx's `lingering_timeout` and
/// `lingering_time`.
package struct LingeringClose: Sendable, Hashable {
    /// The connection closes once its peer has sent nothing for this long.
    package var idle: Duration
    /// The connection closes this long after it started lingering, whatever its peer still sends.
    package var limit: Duration
    /// The connection closes once it has dropped this many bytes: a peer that sends without end cannot keep the loop
    /// reading for the whole `limit`.
    package var maxBytes: Int

    package init(idle: Duration = .seconds(5), limit: Duration = .seconds(30), maxBytes: Int = 64 << 20) {
        self.idle = idle
        self.limit = limit
        self.maxBytes = maxBytes
    }
}
