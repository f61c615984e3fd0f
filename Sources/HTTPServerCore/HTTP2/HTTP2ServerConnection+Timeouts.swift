import HTTP2Transport
import HTTPWire
import NetCore

/// The loop's sweep and the drain: timeouts, minimum transfer rates, idle close, and the two-step GOAWAY.
extension HTTP2ServerConnection {
    /// Checks the connection's deadlines; called by the loop's sweep.
    func checkTimeouts(now: UInt64) {
        guard !connection.isClosed else { return }
        let limits = context.limits
        if connection.pendingWriteBytes > 0 && now &- connection.lastWriteProgress > limits.sendTimeout.nanoseconds {
            connection.close()
            return
        }
        let elapsed = lastRateCheck == 0 ? 0 : now &- lastRateCheck
        lastRateCheck = now
        if checkConnectionSendRate(elapsed: elapsed, limits: limits) { return }
        let socketClear = connection.pendingWriteBytes == 0
        let connectionWindowOpen = session.sendWindow().connection > 0
        var changed = false
        for stream in Array(streams.values) where !stream.finished {
            if checkMinimumRates(
                stream, elapsed: elapsed, limits: limits,
                windowsMatter: socketClear && connectionWindowOpen)
            {
                changed = true
                continue
            }
            if stream.failedStatus != nil && !stream.responded
                && now &- stream.failedAt > HTTP1ServerConnection.failedAnswerGrace.nanoseconds
            {
                answerFailedRequest(stream)
                changed = true
                continue
            }
            // A body that stopped arriving although the window is open.
            if stream.body != nil && !stream.isTunnel && stream.pendingAck == 0
                && now &- stream.lastBodyProgress > limits.bodyTimeout.nanoseconds
            {
                end(stream)
                try? session.resetStream(streamID: stream.id, errorCode: .cancel)
                changed = true
                continue
            }
            // The rest of an answered request's body, let in to be dropped, that stopped coming.
            if stream.discardBody && stream.responded && stream.body == nil
                && now &- stream.lastBodyProgress > limits.bodyTimeout.nanoseconds
            {
                end(stream)
                try? session.stopRequestAfterResponse(streamID: stream.id)
                changed = true
                continue
            }
            // A response the peer does not take (its window stays shut).
            let buffered = session.bufferedOutbound(streamID: stream.id)
            if buffered == 0 || buffered != stream.stalledBuffered {
                stream.stalledBuffered = buffered
                stream.stalledSince = now
            } else if now &- stream.stalledSince > limits.sendTimeout.nanoseconds {
                end(stream)
                try? session.resetStream(streamID: stream.id, errorCode: .cancel)
                changed = true
            }
        }
        if changed { flush() }
        if streams.isEmpty && runningTasks == 0 && now &- lastActivity > limits.idleTimeout.nanoseconds {
            try? session.goAway(graceful: false, errorCode: .noError)
            flush()
            closeAfterFlush()
        }
    }

    /// The connection-wide minimum send rate: bytes waiting in the socket's queue (the client does not read the socket
    /// fast enough: the connection is reset, freeing its buffers at once), or every stream held back by the
    /// connection's flow-control window, which the client keeps (nearly) shut (GOAWAY(ENHANCE_YOUR_CALM), then
    /// close). True when the connection was cut.
    private func checkConnectionSendRate(elapsed: UInt64, limits: HTTPServerLimits) -> Bool {
        let socketBacked = connection.pendingWriteBytes > 0
        if socketSendRate.check(
            total: connection.bytesSent, waiting: socketBacked, elapsed: elapsed,
            rate: limits.minSendRate, window: limits.minRateWindow)
        {
            context.events.minimumRateCut?(.send, .http2)
            connection.reset()
            return true
        }
        let heldByWindow =
            !socketBacked && session.sendWindow().connection <= 0
            && streams.values.contains { !$0.finished && session.bufferedOutbound(streamID: $0.id) > 0 }
        guard
            windowSendRate.check(
                total: session.dataSent, waiting: heldByWindow, elapsed: elapsed,
                rate: limits.minSendRate, window: limits.minRateWindow)
        else { return false }
        context.events.minimumRateCut?(.send, .http2)
        session.goAway(
            HTTP2GoAway(errorCode: .enhanceYourCalm, debugData: "minimum send rate: connection window held shut"),
            terminating: true)
        flush()
        closeAfterFlush(lingering: true)
        return true
    }

    /// A stream's minimum rates: its response held back by its own window, which the client keeps (nearly) shut,
    /// while the socket and the connection's window are clear (`windowsMatter`): the stream is reset (CANCEL). Its
    /// request body trickling in while the client may send it: 408 (the handler, cancelled, sees its body fail with
    /// `timedOut`), then the rest of the body is refused (RST_STREAM NO_ERROR after the answer); the rest of an
    /// answered request's body trickling in: the stream ends. True when the stream was cut.
    private func checkMinimumRates(
        _ stream: Stream, elapsed: UInt64, limits: HTTPServerLimits,
        windowsMatter: Bool
    ) -> Bool {
        let held =
            windowsMatter && session.bufferedOutbound(streamID: stream.id) > 0
            && (session.sendWindow(streamID: stream.id).stream ?? 1) <= 0
        if stream.sendRate.check(
            total: session.bodyBytesSent(streamID: stream.id), waiting: held, elapsed: elapsed,
            rate: limits.minSendRate, window: limits.minRateWindow)
        {
            context.events.minimumRateCut?(.send, .http2)
            end(stream)
            try? session.resetStream(streamID: stream.id, errorCode: .cancel)
            return true
        }
        let receiving = stream.body != nil && !stream.isTunnel && stream.pendingAck == 0
        let draining = stream.discardBody && stream.responded && stream.body == nil && stream.failedStatus == nil
        guard
            stream.receiveRate.check(
                total: Int(clamping: stream.bodyBytes), waiting: receiving || draining,
                elapsed: elapsed, rate: limits.minReceiveRate, window: limits.minRateWindow)
        else { return false }
        context.events.minimumRateCut?(.receive, .http2)
        if receiving, let body = stream.body {
            body.fail(ByteStreamError.timedOut)
            stream.body = nil
            cancelHandler(of: stream)
            stream.discardBody = true
            if !stream.responded {
                stream.failedStatus = 408
                stream.failedAt = connection.loop.roundTime
            }
            try? session.stopRequestAfterResponse(streamID: stream.id)
        } else {
            end(stream)
            try? session.stopRequestAfterResponse(streamID: stream.id)
        }
        return true
    }

    /// Graceful shutdown: a GOAWAY shutdown notice now, the final GOAWAY (last stream processed) after about a
    /// round trip or as soon as no stream is open, then close once the remaining streams are done.
    func beginDrain() {
        guard !draining, !connection.isClosed else { return }
        draining = true
        try? session.goAway(graceful: true)
        if streams.isEmpty {
            sendFinalGoAway()
            return
        }
        scheduleFlush()
        drainTimer = connection.loop.schedule(after: HTTP2ServerConnection.drainNoticeDelay) { [weak self] in
            self?.sendFinalGoAway()
        }
    }

    func sendFinalGoAway() {
        guard !finalGoAwaySent, !connection.isClosed else { return }
        finalGoAwaySent = true
        drainTimer?.cancel()
        drainTimer = nil
        try? session.goAway(graceful: true)
        scheduleFlush()
    }
}
