import HTTP2Transport
import HTTPWire
import NetCore

/// The connection's and the session's side: the socket's events, the output path's hooks
/// (``HTTP2Transport/HTTP2Connection``), the session's events turned into the exchanges' results, and the exchanges
/// moved elsewhere when the server goes away or did not process them.
extension HTTP2ClientConnection {
    func connectionDidBecomeActive(_ connection: Connection) {
        isActive = true
        connectTimer?.cancel()
        connectTimer = nil
        if requiresALPN && connection.isTLS && connection.negotiatedProtocol != "h2" {
            failEverything(.tlsFailed(reason: "the server did not select h2 by ALPN"))
            connection.close()
            return
        }
        connectDuration = .nanoseconds(Int64(clamping: EventLoop.now() &- openedAt))
        idleSince = EventLoop.now()
        flush()
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        receive(bytes)
    }

    func connectionDidReadEOF(_ connection: Connection) {
        connection.close()
    }

    func connectionDidDrainWrites(_ connection: Connection) {
        writesDrained()
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        connectTimer?.cancel()
        connectTimer = nil
        isGoingAway = true
        if !isActive {
            let unsent = Array(streams.values) + takeQueued()
            streams.removeAll()
            pool.http2ConnectFailed(self, exchanges: unsent, error: HTTPClientError(closedBeforeActive: error))
            return
        }
        let failed = streams
        streams.removeAll()
        for exchange in failed.values { exchange.fail(.connectionClosed(responseStarted: exchange.responseStarted)) }
        let waiting = takeQueued()
        pool.http2ConnectionClosed(self)
        // Never sent: they go to another connection.
        for exchange in waiting { retryUnprocessed(exchange) }
    }

    private func failEverything(_ error: HTTPClientError) {
        isGoingAway = true
        let failed = Array(streams.values) + takeQueued()
        streams.removeAll()
        for exchange in failed { exchange.fail(error) }
    }

    // MARK: Output (HTTP2Connection: `flush`, `scheduleFlush`)

    func outputWritten() {
        if !uploads.isEmpty { reportUploads() }
    }

    /// Once it goes away, the connection closes when its last stream has ended.
    var closesWhenFlushed: Bool { isGoingAway && streams.isEmpty }

    func closeAfterOutput() {
        connection.closeAfterFlush()
    }

    func sessionFailed(_ error: HTTP2Error) {
        failConnection()
    }

    /// A fatal session error: write what the session has (it may hold a GOAWAY) and close; streams fail in
    /// `connectionDidClose`.
    func failConnection() {
        isGoingAway = true
        connection.write(remainingOutput())
        connection.closeAfterFlush()
    }

    // MARK: Events

    /// Acts on one of the session's events (see ``HTTP2Transport/HTTP2Connection/processEvents()``).
    func handle(_ event: consuming HTTP2Event) {
        switch consume event {
        case .response(let streamID, let head, _):
            guard let exchange = streams[streamID] else { return }
            if exchange.firstByteAt == 0 { exchange.firstByteAt = EventLoop.now() }
            exchange.responseStarted = true
            exchange.responseHead = head
            exchange.lastReceiveProgress = connection.loop.roundTime
            exchange.chooseDelivery(for: head)
            if exchange.isStreamed {
                exchange.onBodyDemand = { [weak self, weak exchange] in
                    guard let self, let exchange, self.streams[streamID] === exchange else { return }
                    self.acknowledge(streamID, exchange)
                }
                exchange.headReceived()
            }
        case .responseBody(let streamID, let bytes):
            guard let exchange = streams[streamID] else {
                session.consumed(streamID: streamID, count: bytes.count)
                return
            }
            let received = exchange.countBody(bytes.count)
            exchange.lastReceiveProgress = connection.loop.roundTime
            if exchange.limitsCollectedBody && received > configuration.maxResponseBodyBytes {
                session.consumed(streamID: streamID, count: bytes.count)
                abandon(streamID, exchange, with: .malformedResponse(reason: "response body exceeds the limit"))
                return
            }
            // A streamed body's reader is behind: the bytes stay unacknowledged, so the server's window closes.
            exchange.unacknowledged += bytes.count
            if exchange.receive(bytes) { acknowledge(streamID, exchange) }
            let declared = exchange.responseHead?.headers.first(.contentLength).flatMap { Int64($0) }
            exchange.progress.download?(received, declared)
        case .responseEnd(let streamID):
            guard let exchange = streams.removeValue(forKey: streamID) else { return }
            if exchange.isSendingBody {
                // The response is complete before the request body (RFC 9113 §8.1): send no more of it.
                exchange.stopBodyPump()
                try? session.resetStream(streamID: streamID, errorCode: .cancel)
                scheduleFlush()
            }
            exchange.succeed()
        case .streamReset(let streamID, let errorCode):
            guard let exchange = streams.removeValue(forKey: streamID) else { return }
            if errorCode == .refusedStream && !exchange.responseStarted {
                retryUnprocessed(exchange)
            } else {
                exchange.fail(.streamReset(errorCode: errorCode.description))
            }
        case .streamClosed(let streamID):
            if let exchange = streams.removeValue(forKey: streamID) {
                exchange.fail(.connectionClosed(responseStarted: exchange.responseStarted))
            }
            if streams.isEmpty { idleSince = EventLoop.now() }
            startQueued()
        case .goaway(let lastStreamID, _):
            // Oldest first, so they keep their order on the next connection.
            let unprocessed = streams.keys.sorted().filter { $0 > lastStreamID }.compactMap {
                streams.removeValue(forKey: $0)
            }
            goingAway(moving: unprocessed)
        case .remoteSettingsChanged:
            settingsReceived = true
            startQueued()
        case .windowAvailable(let streamID):
            if let exchange = streams[streamID], exchange.bodyPumpPaused {
                exchange.bodyPumpPaused = false
                exchange.bodyPump?.requestMore()
            }
        case .trailers, .request, .requestBody, .requestEnd:
            break
        }
    }

    /// Stops taking exchanges: the pool opens another connection for new ones; `unprocessed` and the queued
    /// exchanges move there.
    func goingAway(moving unprocessed: [HTTPClientExchange] = []) {
        let wasGoingAway = isGoingAway
        isGoingAway = true
        pool.http2ConnectionRetired(self)
        let moving = wasGoingAway ? unprocessed : unprocessed + takeQueued()
        for exchange in moving { retryUnprocessed(exchange) }
    }

    /// The connection opened its last stream (``HTTPClient/Configuration/maxRequestsPerConnection``): it takes no
    /// more, the exchanges waiting for it go to another connection (not counted as a retry: none was sent), and it
    /// closes when its streams have ended (see `flush`).
    func retireAtRequestCap() {
        guard !isGoingAway else { return }
        isGoingAway = true
        pool.http2ConnectionRetired(self)
        for exchange in takeQueued() {
            exchange.onCancel = nil
            pool.resubmit(exchange)
        }
    }

    /// The server did not process `exchange`: send it again on another connection (a bounded number of times, and
    /// never when its streamed body was already pulled from).
    func retryUnprocessed(_ exchange: HTTPClientExchange) {
        exchange.timer?.cancel()
        exchange.stopBodyPump()
        guard exchange.unprocessedRetries < HTTP2ClientConnection.maxUnprocessedRetries, exchange.canResend else {
            exchange.fail(.connectionClosed(responseStarted: false))
            return
        }
        exchange.unprocessedRetries += 1
        exchange.onCancel = nil
        pool.resubmit(exchange)
    }
}
