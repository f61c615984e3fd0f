import NetCore

/// The origin's HTTP/2 connections: opened for an exchange, adopted from a probe whose handshake picked `h2`, retired
/// at GOAWAY, and what happens to the exchanges of one that could not be made.
extension HTTPOriginPool {
    /// Opens an HTTP/2 connection for `exchange`, to `chosen`, else to the next address in turn.
    func openHTTP2(for exchange: HTTPClientExchange, to chosen: SocketAddress? = nil) {
        guard !addresses.isEmpty else {
            exchange.fail(.nameResolutionFailed(host: origin.host))
            return
        }
        let address = chosen ?? nextAddress()
        do {
            let connection = try Connection(connectingTo: address, loop: loop, tls: tls, serverName: origin.host)
            let client = try HTTP2ClientConnection(
                connection: connection, pool: self,
                connectTimeout: min(configuration.connectTimeout, remaining(exchange)),
                requiresALPN: true)
            connection.delegate = client
            http2Connections[ObjectIdentifier(client)] = client
            http2Active.append(client)
            client.enqueue(exchange)
            try connection.start()
        } catch {
            exchange.fail(.connectFailed(reason: "\(error)"))
        }
    }

    /// The probing connection's handshake picked `h2`: it becomes this origin's HTTP/2 connection and takes its
    /// exchange and every waiting one.
    func adoptHTTP2(
        _ connection: Connection, from probe: HTTP1ClientConnection, pending: HTTPClientExchange?,
        openedAt: UInt64
    ) {
        if all.removeValue(forKey: ObjectIdentifier(probe)) != nil { budget?.release() }
        releaseShare(of: probe)
        idle.removeAll { $0 === probe }
        let client: HTTP2ClientConnection
        do {
            client = try HTTP2ClientConnection(
                connection: connection, pool: self, connectTimeout: nil,
                requiresALPN: true, openedAt: openedAt)
        } catch {
            pending?.fail(.connectFailed(reason: "\(error)"))
            connection.close()
            return
        }
        connection.delegate = client
        http2Connections[ObjectIdentifier(client)] = client
        http2Active.append(client)
        learned = .http2
        if let pending { client.enqueue(pending) }
        while let next = nextWaiter() { client.enqueue(next) }
        client.connectionDidBecomeActive(connection)
    }

    /// `connection` stops taking new exchanges (GOAWAY).
    func http2ConnectionRetired(_ connection: HTTP2ClientConnection) {
        guard let index = http2Active.firstIndex(where: { $0 === connection }) else { return }
        http2Active.remove(at: index)
        // With `.auto` the next connection negotiates again.
        if configuration.http2 == .auto && learned == .http2 && http2Active.isEmpty { learned = .unknown }
    }

    /// `connection` closed.
    func http2ConnectionClosed(_ connection: HTTP2ClientConnection) {
        http2ConnectionRetired(connection)
        http2Connections.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// The HTTP/2 `connection` closed before it was established: each of its exchanges (none was sent) goes on to the
    /// name's next address when ``failsOver(_:from:after:)`` allows, else fails with `error`.
    func http2ConnectFailed(
        _ connection: HTTP2ClientConnection, exchanges: [HTTPClientExchange], error: HTTPClientError
    ) {
        http2ConnectionClosed(connection)
        for exchange in exchanges where !exchange.isFinished {
            if failsOver(exchange, from: connection.connection.remoteAddress, after: error) {
                submit(exchange, addresses: [])
            } else {
                exchange.fail(error)
            }
        }
    }
}
