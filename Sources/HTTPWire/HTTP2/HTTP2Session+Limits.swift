import CNghttp2

#if canImport(Glibc)
import Glibc
#endif

/// The peer's limits: streams rejected for its behaviour, the RST_STREAM flood and rapid-reset budgets and the GOAWAY
/// that names why, and what the flow-control windows let the session send (for the minimum send rate).
extension HTTP2Session {
    /// Rejects a stream because of the peer: RST_STREAM(code), counted against the abuse budget.
    func reject(_ stream: StreamState, code: HTTP2ErrorCode) {
        guard let session, !stream.rejected else { return }
        stream.rejected = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, code.rawValue)
    }

    /// The peer reset `streamID` (server): counted against the RST_STREAM flood limit and, when the stream was open
    /// and its response not complete, against the rapid-reset budget. Either running dry ends the connection with a
    /// GOAWAY that says which.
    func peerReset(_ streamID: Int32) {
        guard resetFrames.take(now: feedTime) else {
            goAway(.enhanceYourCalm, "RST_STREAM flood", terminating: true)
            return
        }
        guard let stream = lookupStream(streamID), !stream.localEnded, !stream.locallyReset, !stream.rejected else {
            return
        }
        if resetBudget.streamCancelled(openedAt: stream.openedAt, now: feedTime) {
            // No new stream is taken; the streams up to the last one processed still complete.
            goAway(.enhanceYourCalm, "rapid reset: streams cancelled faster than they complete", terminating: false)
        }
    }

    /// Server: sends `goAway` because of the peer's behaviour (see ``goAway(_:_:terminating:)``).
    package func goAway(_ goAway: HTTP2GoAway, terminating: Bool) {
        self.goAway(goAway.errorCode, goAway.debugData, terminating: terminating)
    }

    /// Sends GOAWAY(`code`) with `reason` as debug data because of the peer's behaviour, once. Its last-stream-id is
    /// the last stream processed; no stream above it is taken from now on. `terminating`: the connection ends as soon
    /// as the GOAWAY is out, and nothing more the peer sends is processed (a flood); otherwise open streams complete.
    func goAway(_ code: HTTP2ErrorCode, _ reason: String, terminating: Bool) {
        guard let session, !self.terminating else { return }
        guard terminating || abuseGoAway == nil else { return }
        let lastStreamID = min(nghttp2_session_get_last_proc_stream_id(session), lastAcceptedStreamID)
        lastAcceptedStreamID = lastStreamID
        finalGoAwaySubmitted = true
        abuseGoAway = HTTP2GoAway(errorCode: code, debugData: reason)
        let debug = Array(reason.utf8)
        let rc = debug.withUnsafeBufferPointer { buffer in
            nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, code.rawValue,
                buffer.baseAddress, buffer.count)
        }
        if terminating {
            if rc == 0 {
                self.terminating = true
            } else {
                _ = nghttp2_session_terminate_session2(session, lastStreamID, code.rawValue)
            }
        }
    }

    /// Server: whether the client has cancelled as many more young streams than it let complete as the rapid-reset
    /// budget allows (see ``HTTP2ResetBudget``): a new stream's handler should wait briefly, so that one cancelled at
    /// once starts nothing (and its cancellation earns the connection a GOAWAY).
    package var holdsNewStreams: Bool { resetBudget.isAtLimit }

    /// Response body bytes of `streamID` handed to nghttp2 so far (0 for a stream the session no longer knows).
    package func bodyBytesSent(streamID: Int32) -> Int {
        lookupStream(streamID)?.outboundSent ?? 0
    }

    /// How much the peer's flow-control windows let the session send now: on the connection, and on `streamID`
    /// (nil when the stream is not open). Zero or less is a window the peer holds shut.
    package func sendWindow(streamID: Int32? = nil) -> (connection: Int, stream: Int?) {
        guard let session else { return (0, nil) }
        let connection = Int(nghttp2_session_get_remote_window_size(session))
        guard let streamID, lookupStream(streamID) != nil else { return (connection, nil) }
        return (connection, Int(nghttp2_session_get_stream_remote_window_size(session, streamID)))
    }

    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
