import CNghttp2
import DequeModule

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
/// Not thread-safe: use from one thread (the connection's event loop).
package final class HTTP2Session {
    package let role: HTTP2Role
    package let settings: HTTP2Settings

    private var session: OpaquePointer?
    private var streams: [Int32: StreamState] = [:]
    private var events = Deque<HTTP2Event>()
    private var failed = false
    private var shutdownNoticeSent = false
    private var finalGoAwaySubmitted = false
    private var requestsAccepted = 0
    private var peerInducedResets = 0
    private var consecutiveEmptyDataFrames = 0
    private var localResetsPending: Set<Int32> = []
    private var openLocalStreams = 0
    /// Server: streams above this id are refused (set by the final GOAWAY, ours or the request cap's).
    private var lastAcceptedStreamID: Int32 = .max
    /// Streams surfaced during the current `feed` call.
    private var surfacedThisFeed: Set<Int32> = []
    /// Streams whose queued events are dropped because they were opened and reset within one `feed`.
    private var suppressed: Set<Int32> = []
    /// Server: streams the peer cancels against streams it lets complete (rapid reset).
    private var resetBudget: HTTP2ResetBudget
    /// Server: RST_STREAM frames received, whatever stream they name.
    private var resetFrames: HTTP2FrameRateLimit
    /// The monotonic time of the current `feed` (nanoseconds), read once per call.
    private var feedTime: UInt64 = 0
    /// The peer abused the connection: a GOAWAY naming why is queued, input is ignored from now on, and the session
    /// is finished once that GOAWAY is out (what nghttp2's `terminate_session` does, but with debug data).
    private var terminating = false
    /// The terminating GOAWAY has been handed out by ``drainOutput(into:limit:)``: nothing more is written.
    private var terminated = false
    /// Whether any GOAWAY has been handed out.
    private var goAwayWritten = false
    /// The GOAWAY this session sent or queued because of the peer's behaviour (a flood, rapid reset), if any.
    package private(set) var abuseGoAway: HTTP2GoAway?
    private let dataProvider = HTTP2Session.makeDataProvider()

    final class StreamState {
        let id: Int32
        /// The header block being received (room for a typical head's fields from the start).
        var fields: [(name: String, value: String)] = []
        var headerListSize = 0
        var surfaced = false
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
        var outboundSent = 0
        // Outbound body.
        var outbound: [UInt8] = []
        var outboundRead = 0
        var outboundEnd = false
        var hasProvider = false
        var providerDeferred = false
        var producerPaused = false

        init(id: Int32) {
            self.id = id
            fields.reserveCapacity(16)
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
        surfacedThisFeed.removeAll(keepingCapacity: true)
        let rv = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        surfacedThisFeed.removeAll(keepingCapacity: true)
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

    /// All bytes ready to write.
    package func pendingOutput() throws(HTTP2Error) -> [UInt8] {
        var out: [UInt8] = []
        try drainOutput(into: &out)
        return out
    }

    /// The next event, or nil when none is waiting.
    package func nextEvent() -> HTTP2Event? {
        while let event = events.popFirst() {
            let drop = event.streamID.map { suppressed.contains($0) } ?? false
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
        guard let session, let stream = streams[streamID], count > 0 else { return }
        let amount = min(count, stream.unconsumed)
        guard amount > 0 else { return }
        stream.unconsumed -= amount
        _ = nghttp2_session_consume(session, streamID, amount)
    }

    /// Body bytes queued for `streamID` and not yet handed to nghttp2.
    package func bufferedOutbound(streamID: Int32) -> Int {
        streams[streamID]?.outboundBuffered ?? 0
    }

    // MARK: - Server API

    /// Sends the response head for `streamID`. With `endStream` the response has no body; otherwise send it with
    /// `sendBody`. Connection-specific fields and fields with invalid names or values are dropped, names
    /// lowercased.
    package func sendResponse(streamID: Int32, head: HTTPResponseHead, endStream: Bool) throws(HTTP2Error) {
        guard role == .server else { throw HTTP2Error(kind: .invalidState, message: "client cannot send a response") }
        guard let session, !failed else { throw HTTP2Error(kind: .sessionClosed, message: "session closed") }
        guard let stream = streams[streamID], stream.surfaced, !stream.hasProvider, !stream.localEnded else {
            throw HTTP2Error(kind: .invalidStream, message: "stream \(streamID) cannot take a response")
        }
        guard (200...999).contains(head.status) else {
            throw HTTP2Error(kind: .invalidState, message: "status \(head.status) is not a final status")
        }
        var fields: [(String, String)] = []
        fields.reserveCapacity(head.headers.count + 1)
        fields.append((":status", String(head.status)))
        HTTP2Session.appendOutboundFields(head.headers, isRequest: false, to: &fields)
        let rc = withNVArray(fields) { nva, count in
            if endStream {
                return nghttp2_submit_response(session, streamID, nva, count, nil)
            }
            var provider = dataProvider
            return nghttp2_submit_response(session, streamID, nva, count, &provider)
        }
        guard rc == 0 else { throw HTTP2Error(nghttp2Code: rc) }
        if !endStream { stream.hasProvider = true }
    }

    /// Queues body bytes for `streamID` (a response on a server, a request body on a client). With `endStream`
    /// the body ends after them. Returns `false` when the stream's queue is full (`streamSendBufferSize`): stop
    /// producing until `.windowAvailable(streamID)`. Extra bytes are still queued, so nothing is lost.
    @discardableResult
    package func sendBody(streamID: Int32, bytes: some Collection<UInt8>, endStream: Bool) throws(HTTP2Error) -> Bool {
        guard let session, !failed else { throw HTTP2Error(kind: .sessionClosed, message: "session closed") }
        guard let stream = streams[streamID], stream.hasProvider, !stream.outboundEnd else {
            throw HTTP2Error(kind: .invalidStream, message: "stream \(streamID) cannot take body bytes")
        }
        if stream.outboundRead > 0 && stream.outboundRead >= stream.outbound.count / 2 {
            stream.outbound.removeFirst(stream.outboundRead)
            stream.outboundRead = 0
        }
        if stream.outbound.isEmpty, let whole = bytes as? [UInt8] {
            // Taken as it is: a body shared by many responses (a coalesced call's) is not copied once per stream.
            stream.outbound = whole
        } else {
            stream.outbound.append(contentsOf: bytes)
        }
        if endStream { stream.outboundEnd = true }
        if stream.providerDeferred {
            stream.providerDeferred = false
            _ = nghttp2_session_resume_data(session, streamID)
        }
        let mayContinue = stream.outboundBuffered < settings.streamSendBufferSize
        if !mayContinue { stream.producerPaused = true }
        return mayContinue
    }

    /// Resets `streamID` with `errorCode` (for example `.cancel` when the upstream failed mid-response). No
    /// `.streamReset` event follows for it, only `.streamClosed`.
    package func resetStream(streamID: Int32, errorCode: HTTP2ErrorCode = .cancel) throws(HTTP2Error) {
        guard let session, !failed else { throw HTTP2Error(kind: .sessionClosed, message: "session closed") }
        guard let stream = streams[streamID] else {
            throw HTTP2Error(kind: .invalidStream, message: "stream \(streamID) is not open")
        }
        stream.locallyReset = true
        localResetsPending.insert(streamID)
        let rc = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode.rawValue)
        guard rc == 0 else { throw HTTP2Error(nghttp2Code: rc) }
    }

    /// Server: asks the client to stop sending a request body it no longer needs, once this stream's response has been
    /// sent in full: RST_STREAM with NO_ERROR after the response's END_STREAM (RFC 9113 §8.1), so that the reset
    /// cannot overtake the response (a reset submitted at once would be sent before the response's DATA frames, and
    /// the client would lose the answer).
    package func stopRequestAfterResponse(streamID: Int32) throws(HTTP2Error) {
        guard let stream = streams[streamID] else {
            throw HTTP2Error(kind: .invalidStream, message: "stream \(streamID) is not open")
        }
        if stream.localEnded {
            try resetStream(streamID: streamID, errorCode: .noError)
        } else {
            stream.resetWhenLocalEnds = true
        }
    }

    /// Starts or completes closing the connection.
    ///
    /// - `graceful: true` on a server, first call: sends a shutdown notice (GOAWAY with the largest stream id), so
    ///   the client stops opening streams while requests in flight still arrive. Call again (after about one
    ///   round trip) to send the final GOAWAY whose last-stream-id is the last stream processed; streams up to it
    ///   complete, then `isFinished` becomes true.
    /// - `graceful: true` on a client, or a second call: the final GOAWAY with `errorCode`.
    /// - `graceful: false`: GOAWAY with `errorCode` and the session stops; open streams are abandoned.
    package func goAway(graceful: Bool, errorCode: HTTP2ErrorCode = .noError) throws(HTTP2Error) {
        guard let session, !failed else { throw HTTP2Error(kind: .sessionClosed, message: "session closed") }
        if !graceful {
            let rc = nghttp2_session_terminate_session(session, errorCode.rawValue)
            guard rc == 0 else { throw HTTP2Error(nghttp2Code: rc) }
            finalGoAwaySubmitted = true
            return
        }
        if role == .server && !shutdownNoticeSent && !finalGoAwaySubmitted {
            shutdownNoticeSent = true
            let rc = nghttp2_submit_shutdown_notice(session)
            guard rc == 0 else { throw HTTP2Error(nghttp2Code: rc) }
            return
        }
        guard !finalGoAwaySubmitted else { return }
        finalGoAwaySubmitted = true
        let lastStreamID = nghttp2_session_get_last_proc_stream_id(session)
        if role == .server { lastAcceptedStreamID = min(lastAcceptedStreamID, lastStreamID) }
        let rc = nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode.rawValue, nil, 0)
        guard rc == 0 else { throw HTTP2Error(nghttp2Code: rc) }
    }

    /// Whether the final GOAWAY was sent or queued (by `goAway` or by the request cap); no new streams are taken.
    package var isDraining: Bool { finalGoAwaySubmitted }

    /// Requests accepted so far (server).
    package var requestCount: Int { requestsAccepted }

    // MARK: - Client API

    /// Whether a new request would start now: the peer's MAX_CONCURRENT_STREAMS leaves room, no GOAWAY was sent
    /// or received, and stream ids are not exhausted. `sendRequest` also works when this is false, but nghttp2
    /// then holds the HEADERS back until a stream closes.
    package var canOpenStream: Bool {
        guard role == .client, let session, !failed else { return false }
        guard nghttp2_session_check_request_allowed(session) != 0 else { return false }
        let limit = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        return UInt32(clamping: openLocalStreams) < limit
    }

    /// Streams this client opened that are not closed yet (including ones nghttp2 holds back).
    package var activeLocalStreams: Int { openLocalStreams }

    /// Sends a request and returns its stream id. Without `endStream`, send the body with `sendBody`.
    /// `host` is folded into `:authority`; connection-specific fields and `te` (other than `trailers`) are
    /// dropped; fields with invalid names or values are dropped.
    package func sendRequest(head: HTTP2RequestHead, endStream: Bool) throws(HTTP2Error) -> Int32 {
        guard role == .client else { throw HTTP2Error(kind: .invalidState, message: "server cannot send a request") }
        guard let session, !failed else { throw HTTP2Error(kind: .sessionClosed, message: "session closed") }
        guard nghttp2_session_check_request_allowed(session) != 0 else {
            throw HTTP2Error(kind: .streamsExhausted, message: "no new stream allowed (GOAWAY or ids exhausted)")
        }
        var fields: [(String, String)] = [(":method", head.method.rawValue)]
        let authority = head.authority ?? head.headers.first(name: "host")
        if head.method == .connect && head.extendedProtocol == nil {
            fields.append((":authority", authority ?? ""))
        } else {
            fields.append((":scheme", head.scheme ?? "https"))
            if let authority { fields.append((":authority", authority)) }
            fields.append((":path", head.path ?? "/"))
            if let proto = head.extendedProtocol { fields.append((":protocol", proto)) }
        }
        // Never emit a request a peer would find malformed (or that could smuggle a second request downstream).
        guard HTTP1Grammar.isToken(head.method.rawValue.utf8) else {
            throw HTTP2Error(kind: .invalidState, message: "invalid method")
        }
        if let authority, !HTTP2Validation.isValidAuthority(authority.utf8) {
            throw HTTP2Error(kind: .invalidState, message: "invalid authority")
        }
        if head.method != .connect || head.extendedProtocol != nil {
            guard HTTP2Validation.isValidPath((head.path ?? "/").utf8, method: head.method),
                HTTP2Validation.isValidScheme((head.scheme ?? "https").utf8)
            else {
                throw HTTP2Error(kind: .invalidState, message: "invalid path or scheme")
            }
        } else if authority == nil {
            throw HTTP2Error(kind: .invalidState, message: "CONNECT needs an authority")
        }
        for (name, value) in fields where !HTTP2Session.isSafePseudoHeader(name: name, value: value) {
            throw HTTP2Error(kind: .invalidState, message: "invalid pseudo-header \(name)")
        }
        HTTP2Session.appendOutboundFields(head.headers, isRequest: true, to: &fields)
        let streamID = withNVArray(fields) { nva, count -> Int32 in
            if endStream {
                return nghttp2_submit_request(session, nil, nva, count, nil, nil)
            }
            var provider = dataProvider
            return nghttp2_submit_request(session, nil, nva, count, &provider, nil)
        }
        guard streamID > 0 else { throw HTTP2Error(nghttp2Code: streamID) }
        let stream = StreamState(id: streamID)
        stream.surfaced = true
        stream.hasProvider = !endStream
        stream.isHeadRequest = head.method == .head
        streams[streamID] = stream
        openLocalStreams += 1
        return streamID
    }

    // MARK: - Header helpers

    /// Appends the fields of `headers` that are safe to send to `out`: connection-specific and invalid fields dropped.
    /// Names keep their case here; ``withNVArray(_:_:)`` lower-cases them as it copies them out, so that no lower-cased
    /// string is made per field.
    static func appendOutboundFields(_ headers: HTTPFields, isRequest: Bool, to out: inout [(String, String)]) {
        let nominated: Set<String> =
            headers.contains(name: "connection")
            ? Set(headers.tokens(name: "connection").map { $0.lowercased() }) : []
        out.reserveCapacity(out.count + headers.count)
        for field in headers {
            let name = field.name
            if HTTP2Validation.isConnectionSpecific(name) { continue }
            if !nominated.isEmpty && nominated.contains(HTTP2Validation.lowercasedName(name)) { continue }
            if isRequest && name.equalsIgnoringASCIICase("host") { continue }
            if name.equalsIgnoringASCIICase("te") && !(isRequest && field.value.equalsIgnoringASCIICase("trailers")) {
                continue
            }
            guard HTTP1Grammar.isToken(name.utf8), isSafe(value: field.value) else { continue }
            out.append((name, field.value))
        }
    }

    /// Whether a pseudo-header (`:name`) may be sent as it is.
    static func isSafePseudoHeader(name: String, value: String) -> Bool {
        HTTP2Validation.isValidName(name.utf8.dropFirst()) && isSafe(value: value)
    }

    /// A value without NUL, CR or LF (other controls are the peer's to refuse).
    private static func isSafe(value: String) -> Bool {
        HTTP1Grammar.allBytes(value.utf8) { $0 != 0 && $0 != 0x0a && $0 != 0x0d }
    }

    /// Calls `body` with an `nghttp2_nv` array for `fields`; the pointers live only during the call (nghttp2 copies).
    private func withNVArray<R>(_ fields: [(String, String)], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        var storage: [UInt8] = []
        storage.reserveCapacity(fields.reduce(1) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        var ranges: [(Int, Int, Int, Int, Bool)] = []
        ranges.reserveCapacity(fields.count)
        for (name, value) in fields {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            let sensitive =
                name.equalsIgnoringASCIICase("authorization") || name.equalsIgnoringASCIICase("proxy-authorization")
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart, sensitive))
        }
        storage.append(0)
        return storage.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            // HTTP/2 field names are lower case (RFC 9113 §8.2.1): lower-cased here, in the copy (pseudo-header names
            // already are).
            for range in ranges {
                for index in range.0..<(range.0 + range.1) { base[index] = HTTP1Grammar.lowercased(base[index]) }
            }
            let nva = ranges.map { range in
                nghttp2_nv(
                    name: base + range.0, value: base + range.2, namelen: range.1, valuelen: range.3,
                    flags: UInt8(range.4 ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nva.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }

    private func emit(_ event: HTTP2Event) {
        events.append(event)
    }

    /// Rejects a stream because of the peer: RST_STREAM(code), counted against the abuse budget.
    private func reject(_ stream: StreamState, code: HTTP2ErrorCode) {
        guard let session, !stream.rejected else { return }
        stream.rejected = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, code.rawValue)
    }

    // MARK: - Abuse

    /// The peer reset `streamID` (server): counted against the RST_STREAM flood limit and, when the stream was open
    /// and its response not complete, against the rapid-reset budget. Either running dry ends the connection with a
    /// GOAWAY that says which.
    private func peerReset(_ streamID: Int32) {
        guard resetFrames.take(now: feedTime) else {
            goAway(.enhanceYourCalm, "RST_STREAM flood", terminating: true)
            return
        }
        guard let stream = streams[streamID], !stream.localEnded, !stream.locallyReset, !stream.rejected else { return }
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
    private func goAway(_ code: HTTP2ErrorCode, _ reason: String, terminating: Bool) {
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

    /// Response body bytes handed to nghttp2 so far, all streams together (they leave as the windows allow).
    package private(set) var dataSent = 0

    /// Response body bytes of `streamID` handed to nghttp2 so far (0 for a stream the session no longer knows).
    package func bodyBytesSent(streamID: Int32) -> Int {
        streams[streamID]?.outboundSent ?? 0
    }

    /// How much the peer's flow-control windows let the session send now: on the connection, and on `streamID`
    /// (nil when the stream is not open). Zero or less is a window the peer holds shut.
    package func sendWindow(streamID: Int32? = nil) -> (connection: Int, stream: Int?) {
        guard let session else { return (0, nil) }
        let connection = Int(nghttp2_session_get_remote_window_size(session))
        guard let streamID, streams[streamID] != nil else { return (connection, nil) }
        return (connection, Int(nghttp2_session_get_stream_remote_window_size(session, streamID)))
    }

    static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    // MARK: - Callbacks (called from HTTP2Callbacks.swift during mem_recv / mem_send)

    func onBeginHeaders(_ frame: nghttp2_frame) -> Int32 {
        let streamID = frame.hd.stream_id
        if role == .server && frame.headers.cat == NGHTTP2_HCAT_REQUEST {
            if streamID > lastAcceptedStreamID {
                // After our final GOAWAY: not processed, so the client may retry it elsewhere.
                if let session {
                    localResetsPending.insert(streamID)
                    _ = nghttp2_submit_rst_stream(
                        session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                        HTTP2ErrorCode.refusedStream.rawValue)
                }
                return 0
            }
            let stream = StreamState(id: streamID)
            stream.openedAt = feedTime
            streams[streamID] = stream
            requestsAccepted += 1
            if let cap = settings.maxRequestsPerConnection, requestsAccepted >= cap, !finalGoAwaySubmitted, let session
            {
                // This stream is the last one served; later ones are ignored by nghttp2.
                finalGoAwaySubmitted = true
                lastAcceptedStreamID = streamID
                _ = nghttp2_submit_goaway(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                    HTTP2ErrorCode.noError.rawValue, nil, 0)
            }
            return 0
        }
        guard let stream = streams[streamID] else { return 0 }
        // Trailers, or the next response head after a 1xx.
        stream.fields.removeAll()
        stream.headerListSize = 0
        return 0
    }

    func onHeader(_ frame: nghttp2_frame, name: String, value: String) -> Int32 {
        guard let stream = streams[frame.hd.stream_id], !stream.rejected else { return 0 }
        stream.headerListSize += name.utf8.count + value.utf8.count + 32
        if stream.headerListSize > Int(settings.maxHeaderListSize) {
            reject(stream, code: .enhanceYourCalm)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        stream.fields.append((name, value))
        return 0
    }

    func onInvalidHeader(_ frame: nghttp2_frame) -> Int32 {
        // nghttp2 would silently drop the field; a gateway rejects the whole request instead (RFC 9113 §8.2.1).
        if let stream = streams[frame.hd.stream_id] {
            reject(stream, code: .protocolError)
        } else if let session {
            _ = nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), frame.hd.stream_id,
                HTTP2ErrorCode.protocolError.rawValue)
        }
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
    }

    func onFrameReceived(_ frame: nghttp2_frame) -> Int32 {
        let streamID = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            guard let stream = streams[streamID], !stream.rejected else { return 0 }
            if endStream { stream.remoteEnded = true }
            if role == .server {
                handleRequestHeaders(stream, endStream: endStream)
            } else {
                handleResponseHeaders(stream, endStream: endStream)
            }
        case NGHTTP2_DATA.rawValue:
            if frame.hd.length == 0 && !endStream {
                consecutiveEmptyDataFrames += 1
                if consecutiveEmptyDataFrames > settings.maxConsecutiveEmptyDataFrames {
                    goAway(.enhanceYourCalm, "empty DATA frame flood", terminating: true)
                }
                return 0
            }
            consecutiveEmptyDataFrames = 0
            guard let stream = streams[streamID], !stream.rejected, endStream else { return 0 }
            stream.remoteEnded = true
            if let length = stream.contentLength, length != stream.bodyReceived,
                !(role == .client && stream.isHeadRequest)
            {
                reject(stream, code: .protocolError)
                return 0
            }
            emit(role == .server ? .requestEnd(streamID: streamID) : .responseEnd(streamID: streamID))
        case NGHTTP2_GOAWAY.rawValue:
            emit(.goaway(lastStreamID: frame.goaway.last_stream_id, errorCode: HTTP2ErrorCode(frame.goaway.error_code)))
        case NGHTTP2_RST_STREAM.rawValue where role == .server:
            peerReset(streamID)
        case NGHTTP2_SETTINGS.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { emit(.remoteSettingsChanged) }
        default:
            break
        }
        return 0
    }

    private func handleRequestHeaders(_ stream: StreamState, endStream: Bool) {
        if stream.surfaced {
            // Trailers.
            guard endStream, let trailers = HTTP2Validation.validateTrailers(stream.fields) else {
                reject(stream, code: .protocolError)
                return
            }
            stream.fields.removeAll()
            if let length = stream.contentLength, length != stream.bodyReceived {
                reject(stream, code: .protocolError)
                return
            }
            emit(.trailers(streamID: stream.id, headers: trailers))
            emit(.requestEnd(streamID: stream.id))
            return
        }
        switch HTTP2Validation.validateRequest(stream.fields) {
        case .failure:
            reject(stream, code: .protocolError)
        case .success(let head):
            stream.fields.removeAll()
            if let length = head.headers.first(name: "content-length").flatMap({ Int($0) }) {
                stream.contentLength = length
                if endStream && length != 0 && head.method != .head {
                    reject(stream, code: .protocolError)
                    return
                }
            }
            stream.surfaced = true
            surfacedThisFeed.insert(stream.id)
            emit(.request(streamID: stream.id, head: head, endStream: endStream))
        }
    }

    private func handleResponseHeaders(_ stream: StreamState, endStream: Bool) {
        if stream.surfacedResponse {
            guard endStream, let trailers = HTTP2Validation.validateTrailers(stream.fields) else {
                reject(stream, code: .protocolError)
                return
            }
            emit(.trailers(streamID: stream.id, headers: trailers))
            emit(.responseEnd(streamID: stream.id))
            return
        }
        var status: Int?
        var headers = HTTPFields()
        for (name, value) in stream.fields {
            if name == ":status" {
                // `:status` once, first, three digits (RFC 9113 §8.3.2); any other pseudo-header is malformed.
                guard status == nil, headers.isEmpty, value.utf8.count == 3,
                    value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
                else {
                    reject(stream, code: .protocolError)
                    return
                }
                status = Int(value)
                continue
            }
            guard HTTP2Validation.isValidName(name.utf8), HTTP2Validation.isValidValue(value.utf8) || value.isEmpty,
                !HTTP2Validation.isConnectionSpecific(name)
            else {
                reject(stream, code: .protocolError)
                return
            }
            headers.add(name: name, value: value)
        }
        stream.fields.removeAll()
        // A status outside 100–599 is malformed (RFC 9110 §15), as the HTTP/1.1 parser holds it: `000` or `999` would
        // otherwise reach the gateway's client as a status it cannot write.
        guard let status, (100...599).contains(status) else {
            reject(stream, code: .protocolError)
            return
        }
        if (100..<200).contains(status) { return }  // Interim response: wait for the final one.
        if let length = headers.first(name: "content-length").flatMap({ Int($0) }) { stream.contentLength = length }
        stream.surfacedResponse = true
        emit(
            .response(
                streamID: stream.id, head: HTTPResponseHead(status: status, version: .http2, headers: headers),
                endStream: endStream))
        if endStream { emit(.responseEnd(streamID: stream.id)) }
    }

    func onFrameSent(_ frame: nghttp2_frame) -> Int32 {
        let streamID = frame.hd.stream_id
        switch UInt32(frame.hd.type) {
        case NGHTTP2_GOAWAY.rawValue:
            goAwayWritten = true
            if terminating && frame.goaway.error_code == abuseGoAway?.errorCode.rawValue { terminated = true }
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let stream = streams[streamID] {
                if role == .server && !stream.localEnded { resetBudget.streamCompleted() }
                stream.localEnded = true
                if stream.resetWhenLocalEnds {
                    stream.resetWhenLocalEnds = false
                    try? resetStream(streamID: streamID, errorCode: .noError)
                }
            }
        case NGHTTP2_RST_STREAM.rawValue:
            if localResetsPending.remove(streamID) == nil && role == .server {
                peerInducedResets += 1
                if peerInducedResets > settings.maxPeerInducedResets {
                    goAway(
                        .enhanceYourCalm, "too many streams reset for malformed or refused requests", terminating: true)
                }
            }
        default:
            break
        }
        return 0
    }

    func onDataChunk(streamID: Int32, bytes: [UInt8]) -> Int32 {
        guard let session else { return 0 }
        guard let stream = streams[streamID], !stream.rejected, !stream.locallyReset,
            stream.surfaced && (role == .server || stream.surfacedResponse)
        else {
            // Nobody will pass these on: credit the windows now.
            _ = nghttp2_session_consume(session, streamID, bytes.count)
            return 0
        }
        stream.bodyReceived += bytes.count
        if let length = stream.contentLength, stream.bodyReceived > length {
            _ = nghttp2_session_consume(session, streamID, bytes.count)
            reject(stream, code: .protocolError)
            return 0
        }
        stream.unconsumed += bytes.count
        emit(
            role == .server
                ? .requestBody(streamID: streamID, bytes: bytes) : .responseBody(streamID: streamID, bytes: bytes))
        return 0
    }

    func onStreamClose(streamID: Int32, errorCode: UInt32) -> Int32 {
        localResetsPending.remove(streamID)
        guard let stream = streams.removeValue(forKey: streamID) else { return 0 }
        if role == .client { openLocalStreams -= 1 }
        if stream.unconsumed > 0, let session {
            // The stream is gone: give its unacknowledged bytes back to the connection window.
            _ = nghttp2_session_consume_connection(session, stream.unconsumed)
        }
        guard stream.surfaced else { return 0 }
        if role == .server && surfacedThisFeed.contains(streamID) && !stream.localEnded {
            // Opened and reset within one read (rapid reset): the caller never sees it, so no work starts.
            suppressed.insert(streamID)
            return 0
        }
        let clean = errorCode == 0 && stream.remoteEnded && stream.localEnded && !stream.rejected
        if !clean && !stream.locallyReset {
            emit(.streamReset(streamID: streamID, errorCode: HTTP2ErrorCode(errorCode)))
        }
        emit(.streamClosed(streamID: streamID))
        return 0
    }

    /// The data provider: hands queued body bytes to nghttp2, defers when the queue is empty.
    func readOutbound(streamID: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: UnsafeMutablePointer<UInt32>)
        -> Int
    {
        guard let stream = streams[streamID] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let available = stream.outboundBuffered
        if available == 0 {
            if stream.outboundEnd {
                flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                return 0
            }
            stream.providerDeferred = true
            if stream.producerPaused {
                stream.producerPaused = false
                emit(.windowAvailable(streamID: streamID))
            }
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        let count = min(available, buffer.count)
        stream.outbound.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + stream.outboundRead, byteCount: count)
        }
        stream.outboundRead += count
        stream.outboundSent += count
        dataSent += count
        if stream.outboundRead == stream.outbound.count {
            stream.outbound.removeAll(keepingCapacity: stream.outbound.count <= settings.streamSendBufferSize)
            stream.outboundRead = 0
            if stream.outboundEnd { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        }
        if stream.producerPaused && stream.outboundBuffered < settings.streamSendBufferSize / 2 {
            stream.producerPaused = false
            emit(.windowAvailable(streamID: streamID))
        }
        return count
    }
}
