import CNghttp2
import RingQueue

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/2 connection, server or client side, over libnghttp2. Pure: it never touches a socket.
///
/// The event loop drives it:
/// 1. `feed(_:)` the bytes read from the socket (a thrown error is fatal: drain output, then close).
/// 2. Read `nextEvent()` until nil and act on the events.
/// 3. Make calls (`sendResponse`, `sendBody`, `sendRequest`, `consumed`, `resetStream`, `goAway`).
/// 4. `drainOutput(into:)` and write the bytes; repeat step 2, since sending can produce events
///    (`.windowAvailable`, `.streamClosed`).
/// 5. Close the socket when `isFinished` is true (both sides are done, after GOAWAY or a fatal error).
///
/// Flow control is real back-pressure: the session never sends WINDOW_UPDATE on its own. A peer may send at most
/// `initialWindowSize` body bytes per stream (and `connectionWindowSize` in total) until you call
/// `consumed(streamID:count:)` for bytes you have passed on. Outbound, body bytes wait in a per-stream queue that
/// nghttp2 pulls only as the peer's window allows; `sendBody` returns `false` once the queue holds
/// `streamSendBufferSize` bytes, and `.windowAvailable` says when to resume.
///
/// Not thread-safe: use from one thread (the connection's event loop). The state a frame touches (the streams, the
/// event queue, a stream's outbound bytes) is marked `@exclusivity(unchecked)`: it is used on that thread only, and no
/// access to it spans a call into nghttp2 (whose callbacks change it), so the runtime's dynamic check (a
/// thread-local access set, about 2.5k instructions per proxied HTTP/2 request) buys nothing.
package final class HTTP2Session {
    package let role: HTTP2Role
    package let settings: HTTP2Settings

    var session: OpaquePointer?
    @exclusivity(unchecked) var streams: [HTTP2StreamKey: StreamState] = [:]
    /// The stream ``lookupStream(_:)`` found last: the callbacks of one frame, and the calls that answer it, ask for
    /// the same stream one after another, so most lookups skip hashing. Cleared when that stream is removed (stream
    /// ids are never reused). Loop thread only, never accessed re-entrantly: unchecked.
    @exclusivity(unchecked) var lastStream: StreamState?
    /// The memory ``drainOutput(limit:to:)`` drains into, kept between calls while streams are open (see there), and
    /// whether a drain is using it. Loop thread only; never held across a call: unchecked.
    @exclusivity(unchecked) private var outputStorage: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var outputCapacity = 0
    @exclusivity(unchecked) private var outputInUse = false

    /// The open stream `id`, if any (``streams``, through ``lastStream``).
    @inline(__always)
    func lookupStream(_ id: Int32) -> StreamState? {
        if let last = lastStream, last.id == id { return last }
        guard let found = streams[HTTP2StreamKey(id)] else { return nil }
        lastStream = found
        return found
    }
    @exclusivity(unchecked) var events = RingQueue<HTTP2Event>()
    @exclusivity(unchecked) var failed = false
    var shutdownNoticeSent = false
    var finalGoAwaySubmitted = false
    var requestsAccepted = 0
    var peerInducedResets = 0
    var consecutiveEmptyDataFrames = 0
    @exclusivity(unchecked) var localResetsPending: Set<Int32> = []
    var openLocalStreams = 0
    /// Server: streams above this id are refused (set by the final GOAWAY, ours or the request cap's).
    var lastAcceptedStreamID: Int32 = .max
    /// Counts `feed` calls' starts and ends: odd while one runs. A stream surfaced during the current call has it as
    /// its ``StreamState/surfacedInFeed`` (no set of stream ids to hash into and empty).
    @exclusivity(unchecked) var feedSerial: UInt64 = 0
    /// Streams whose queued events are dropped because they were opened and reset within one `feed`.
    @exclusivity(unchecked) var suppressed: Set<Int32> = []
    /// Server: streams the peer cancels against streams it lets complete (rapid reset).
    var resetBudget: HTTP2ResetBudget
    /// Server: RST_STREAM frames received, whatever stream they name.
    var resetFrames: HTTP2FrameRateLimit
    /// The monotonic time of the current `feed` (nanoseconds), read once per call.
    var feedTime: UInt64 = 0
    /// The peer abused the connection: a GOAWAY naming why is queued, input is ignored from now on, and the session
    /// is finished once that GOAWAY is out (what nghttp2's `terminate_session` does, but with debug data).
    var terminating = false
    /// The terminating GOAWAY has been handed out by ``drainOutput(into:limit:)``: nothing more is written.
    var terminated = false
    /// Whether any GOAWAY has been handed out.
    var goAwayWritten = false
    /// The GOAWAY this session sent or queued because of the peer's behaviour (a flood, rapid reset), if any.
    package internal(set) var abuseGoAway: HTTP2GoAway?
    let dataProvider = HTTP2Session.makeDataProvider()

    final class StreamState {
        let id: Int32
        /// The header block being received as strings (room for a typical head's fields made at its first field).
        @exclusivity(unchecked) var fields: [(name: String, value: String)] = []
        /// Server: the request's first header block, built as it arrives while ``buildsRequest``
        /// (``HTTP2RequestBuilder``). Loop thread only, never accessed re-entrantly: unchecked.
        @exclusivity(unchecked) var request = HTTP2RequestBuilder()
        @exclusivity(unchecked) var buildsRequest = false
        @exclusivity(unchecked) var headerListSize = 0
        var surfaced = false
        /// The session's ``HTTP2Session/feedSerial`` when the request was surfaced.
        var surfacedInFeed: UInt64 = 0
        /// Client: whether the final response head was surfaced.
        var surfacedResponse = false
        var rejected = false
        var locallyReset = false
        var remoteEnded = false
        var localEnded = false
        /// Reset with NO_ERROR once the local side has ended (see ``HTTP2Session/stopRequestAfterResponse(streamID:)``).
        var resetWhenLocalEnds = false
        var contentLength: Int?
        var bodyReceived = 0
        var unconsumed = 0
        var isHeadRequest = false
        /// Server: when the request's HEADERS began (monotonic nanoseconds), for ``HTTP2ResetBudget``.
        var openedAt: UInt64 = 0
        /// Response body bytes handed to nghttp2 (sent as DATA as the peer's windows allow).
        @exclusivity(unchecked) var outboundSent = 0
        // Outbound body.
        @exclusivity(unchecked) var outbound: [UInt8] = []
        @exclusivity(unchecked) var outboundRead = 0
        @exclusivity(unchecked) var outboundEnd = false
        var hasProvider = false
        @exclusivity(unchecked) var providerDeferred = false
        @exclusivity(unchecked) var producerPaused = false

        init(id: Int32) {
            self.id = id
        }

        var outboundBuffered: Int { outbound.count - outboundRead }
    }

    /// Creates a session and queues our SETTINGS (and, for a client, the connection preface).
    package init(role: HTTP2Role, settings: HTTP2Settings = HTTP2Settings()) throws(HTTP2Error) {
        self.role = role
        self.settings = settings
        self.resetBudget = HTTP2ResetBudget(
            limit: settings.maxPrematureResets ?? Int(settings.maxConcurrentStreams),
            prematureAge: settings.prematureResetAge)
        self.resetFrames = HTTP2FrameRateLimit(
            burst: settings.streamResetBurst, ratePerSecond: settings.streamResetRate)

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw HTTP2Error(kind: .sessionError, message: "nghttp2_option_new failed")
        }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_no_closed_streams(option, 1)
        nghttp2_option_set_max_continuations(option, settings.maxContinuations)
        nghttp2_option_set_max_outbound_ack(option, settings.maxOutboundAck)
        nghttp2_option_set_max_settings(option, settings.maxSettingsEntries)
        if role == .server {
            // A backstop: the session's own bucket (`resetFrames`, the same settings) runs dry first and says why.
            nghttp2_option_set_stream_reset_rate_limit(
                option, settings.streamResetBurst.multipliedReportingOverflow(by: 2).partialValue,
                settings.streamResetRate.multipliedReportingOverflow(by: 2).partialValue)
        }

        guard let callbacks = HTTP2Session.makeCallbacks() else {
            throw HTTP2Error(kind: .sessionError, message: "nghttp2_session_callbacks_new failed")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }

        let userData = Unmanaged.passUnretained(self).toOpaque()
        var created: OpaquePointer?
        let rc =
            role == .server
            ? nghttp2_session_server_new2(&created, callbacks, userData, option)
            : nghttp2_session_client_new2(&created, callbacks, userData, option)
        guard rc == 0, let created else { throw HTTP2Error(nghttp2Code: rc) }
        session = created

        var entries: [nghttp2_settings_entry] = [
            .init(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: settings.maxConcurrentStreams),
            .init(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: settings.initialWindowSize),
            .init(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: settings.maxFrameSize),
            .init(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: settings.maxHeaderListSize),
            .init(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: settings.headerTableSize)
        ]
        if role == .client {
            entries.append(.init(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0))
        } else if settings.enableConnectProtocol {
            entries.append(.init(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL.rawValue), value: 1))
        }
        let settingsRC = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        guard settingsRC == 0 else { throw HTTP2Error(nghttp2Code: settingsRC) }
        if settings.connectionWindowSize > 65_535 {
            let windowRC = nghttp2_session_set_local_window_size(
                created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                settings.connectionWindowSize)
            guard windowRC == 0 else { throw HTTP2Error(nghttp2Code: windowRC) }
        }
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        free(outputStorage)
    }

    // MARK: - Input and output

    /// Processes bytes read from the peer. Throws on a fatal error (bad preface, flood, too many CONTINUATION
    /// frames, …): drain output then close the connection. Protocol errors nghttp2 answers with GOAWAY do not
    /// throw; the GOAWAY shows up in the output and `isFinished` becomes true once it is written.
    package func feed(_ bytes: UnsafeRawBufferPointer) throws(HTTP2Error) {
        guard let session, !failed else {
            throw HTTP2Error(kind: .sessionClosed, message: "session already failed")
        }
        // After a GOAWAY for abuse, nothing more the peer sends is processed.
        guard let base = bytes.baseAddress, bytes.count > 0, !terminating else { return }
        feedTime = Self.monotonicNow()
        feedSerial &+= 1
        let rv = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        feedSerial &+= 1
        if rv < 0 {
            failed = true
            throw HTTP2Error(nghttp2Code: Int32(truncatingIfNeeded: rv))
        }
    }

    /// `feed` for an array.
    package func feed(_ bytes: [UInt8]) throws(HTTP2Error) {
        var failure: HTTP2Error?
        bytes.withUnsafeBytes { raw in
            do throws(HTTP2Error) { try feed(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Appends bytes to write to the peer to `buffer`, stopping once `buffer` holds at least `limit` bytes
    /// (pass a limit to stop pulling body data while the socket is not writable).
    package func drainOutput(into buffer: inout [UInt8], limit: Int = .max) throws(HTTP2Error) {
        guard let session else { throw HTTP2Error(kind: .sessionClosed, message: "no session") }
        while buffer.count < limit && !terminated {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                failed = true
                throw HTTP2Error(nghttp2Code: Int32(truncatingIfNeeded: n))
            }
            guard n > 0, let data else { break }
            buffer.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
    }

    /// Drains output as ``drainOutput(into:limit:)`` does, into memory the session keeps between calls while it has
    /// open streams (so a busy connection's flush allocates nothing, and an idle one holds nothing), and hands what was drained to `write` (not called when there is nothing). On a failure the
    /// bytes drained before it are handed over first, then the error is thrown. A call made from inside `write`
    /// drains into an array of its own.
    package func drainOutput(limit: Int, to write: (UnsafeRawBufferPointer) -> Void) throws(HTTP2Error) {
        guard let session else { throw HTTP2Error(kind: .sessionClosed, message: "no session") }
        if outputInUse {
            var buffer: [UInt8] = []
            var failure: HTTP2Error?
            do { try drainOutput(into: &buffer, limit: limit) } catch { failure = error }
            if !buffer.isEmpty { buffer.withUnsafeBytes(write) }
            if let failure { throw failure }
            return
        }
        outputInUse = true
        defer { outputInUse = false }
        var count = 0
        var failure: HTTP2Error?
        while count < limit && !terminated {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                failed = true
                failure = HTTP2Error(nghttp2Code: Int32(truncatingIfNeeded: n))
                break
            }
            guard n > 0, let data else { break }
            if count + n > outputCapacity {
                let capacity = max(count + n, outputCapacity * 2, 4096)
                guard let grown = realloc(outputStorage, capacity) else {
                    // No memory to gather in: what is gathered, then this chunk, go out as they are.
                    if count > 0 { write(UnsafeRawBufferPointer(start: outputStorage, count: count)) }
                    write(UnsafeRawBufferPointer(start: data, count: n))
                    count = 0
                    continue
                }
                outputStorage = grown
                outputCapacity = capacity
            }
            guard let storage = outputStorage else { break }
            memcpy(storage + count, data, n)
            count += n
        }
        if count > 0 { write(UnsafeRawBufferPointer(start: outputStorage, count: count)) }
        // Kept only while streams are open: an idle connection holds none of it, and memory grown by a large flush
        // (body frames up to the write high water) is not kept either.
        if outputCapacity > Self.keptOutputCapacity || streams.isEmpty {
            free(outputStorage)
            outputStorage = nil
            outputCapacity = 0
        }
        if let failure { throw failure }
    }

    /// The most memory ``drainOutput(limit:to:)`` keeps between calls.
    static let keptOutputCapacity = 32 * 1024

    /// All bytes ready to write.
    package func pendingOutput() throws(HTTP2Error) -> [UInt8] {
        var out: [UInt8] = []
        try drainOutput(into: &out)
        return out
    }

    /// The next event, or nil when none is waiting.
    package func nextEvent() -> HTTP2Event? {
        while let event = events.popFirst() {
            // Usually empty: then nothing to hash.
            let drop = !suppressed.isEmpty && (event.streamID.map { suppressed.contains($0) } ?? false)
            if events.isEmpty { suppressed.removeAll(keepingCapacity: true) }
            if drop { continue }
            return event
        }
        return nil
    }

    /// Whether the session is done (GOAWAY exchanged and no active stream, or a fatal error): close the socket
    /// after writing any output.
    package var isFinished: Bool {
        guard let session, !failed, !terminated else { return true }
        return nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    /// Whether nghttp2 has output to write.
    package var wantsWrite: Bool {
        guard let session, !failed, !terminated else { return false }
        return nghttp2_session_want_write(session) != 0
    }

    /// The GOAWAY frame to write after `error` ended the session (see ``feed(_:)``), unless a GOAWAY was already
    /// written or the error calls for none (``HTTP2Error/goAway``): nghttp2 stops without one for a CONTINUATION or
    /// acknowledgement flood, so the peer would not learn why. Call after draining the output.
    package func goAwayFrame(after error: HTTP2Error) -> [UInt8] {
        guard role == .server, !goAwayWritten, let goAway = error.goAway else { return [] }
        goAwayWritten = true
        if abuseGoAway == nil { abuseGoAway = goAway }
        let lastStreamID = session.map { nghttp2_session_get_last_proc_stream_id($0) } ?? 0
        return goAway.frame(lastStreamID: min(lastStreamID, lastAcceptedStreamID))
    }

    // MARK: - Flow control

    /// Acknowledges `count` body bytes of `streamID` as passed on, so WINDOW_UPDATE can let the peer send more.
    /// Bytes of a stream that has closed were already credited back when it closed; such calls are ignored.
    package func consumed(streamID: Int32, count: Int) {
        guard let session, let stream = lookupStream(streamID), count > 0 else { return }
        let amount = min(count, stream.unconsumed)
        guard amount > 0 else { return }
        stream.unconsumed -= amount
        _ = nghttp2_session_consume(session, streamID, amount)
    }

    /// Body bytes queued for `streamID` and not yet handed to nghttp2.
    package func bufferedOutbound(streamID: Int32) -> Int {
        lookupStream(streamID)?.outboundBuffered ?? 0
    }

    /// Response body bytes handed to nghttp2 so far, all streams together (they leave as the windows allow).
    @exclusivity(unchecked) package internal(set) var dataSent = 0
}
