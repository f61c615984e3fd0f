import HTTPWire
import NetCore

/// Serves a connection until its protocol is known, then hands it to ``HTTP1ServerConnection`` or
/// ``HTTP2ServerConnection``:
/// - TLS: after the handshake, by ALPN (`h2` → HTTP/2, anything else → HTTP/1.1).
/// - Cleartext: by the first bytes. They are buffered and compared with the HTTP/2 connection preface
///   (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, prior knowledge); the first byte that differs means HTTP/1.1, a whole
///   preface means HTTP/2. The buffered bytes go to the chosen handler. `Upgrade: h2c` is not honoured.
///
/// Loop thread only.
final class HTTPProtocolSelector: HTTPServerConnectionHandler {
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    let connection: Connection
    private let context: HTTPServerLoopContext
    private let createdAt = EventLoop.now()
    private var activeSince: UInt64 = 0
    private var buffered: [UInt8] = []
    private var decided = false

    init(connection: Connection, context: HTTPServerLoopContext) {
        self.connection = connection
        self.context = context
    }

    // MARK: ConnectionDelegate

    func connectionDidBecomeActive(_ connection: Connection) {
        activeSince = EventLoop.now()
        guard connection.isTLS else { return }
        if connection.negotiatedProtocol == "h2" {
            switchToHTTP2()
        } else {
            switchToHTTP1()
        }
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !decided else { return }
        buffered.append(contentsOf: bytes)
        let preface = HTTPProtocolSelector.preface
        let compared = min(buffered.count, preface.count)
        if !buffered[..<compared].elementsEqual(preface[..<compared]) {
            switchToHTTP1()
        } else if compared == preface.count {
            switchToHTTP2()
        }
        // Otherwise a prefix of the preface: wait for more.
    }

    func connectionDidReadEOF(_ connection: Connection) {
        guard !decided, !buffered.isEmpty else {
            connection.close()
            return
        }
        // A short HTTP/1.x message followed by a half-close: let HTTP/1.1 answer it.
        let handler = switchToHTTP1()
        handler?.connectionDidReadEOF(connection)
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        context.connectionClosed(connection)
    }

    // MARK: Hand-over

    @discardableResult
    private func switchToHTTP1() -> HTTP1ServerConnection? {
        guard !decided, !connection.isClosed else { return nil }
        decided = true
        let handler = HTTP1ServerConnection(connection: connection, context: context)
        handOver(to: handler)
        return handler
    }

    /// Makes `handler` the connection's, and gives it what was read while the protocol was undecided.
    private func handOver(to handler: some HTTPServerConnectionHandler) {
        context.replaceHandler(of: connection, with: handler)
        handler.connectionDidBecomeActive(connection)
        let bytes = buffered
        buffered = []
        if !bytes.isEmpty {
            bytes.withUnsafeBytes { handler.connection(connection, didRead: $0) }
        }
    }

    private func switchToHTTP2() {
        guard !decided, !connection.isClosed else { return }
        decided = true
        let handler: HTTP2ServerConnection
        do {
            handler = try HTTP2ServerConnection(connection: connection, context: context)
        } catch {
            connection.close(error: error)
            return
        }
        handOver(to: handler)
    }

    // MARK: Timeouts and drain

    func checkTimeouts(now: UInt64) {
        if activeSince == 0 {
            if now &- createdAt > context.handshakeTimeout.nanoseconds { connection.close() }
            return
        }
        let limit = buffered.isEmpty ? context.limits.idleTimeout : context.limits.headerTimeout
        if now &- activeSince > limit.nanoseconds { connection.close() }
    }

    /// Nothing was asked on this connection yet: close it.
    func beginDrain() {
        connection.closeAfterFlush()
    }
}
