import CNghttp2

/// What the session sends: response and request heads, bodies (queued per stream, pulled by nghttp2 through the data
/// provider as the peer's windows allow), resets and GOAWAY.
extension HTTP2Session {
    /// Sends the response head for `streamID`. With `endStream` the response has no body; otherwise send it with
    /// `sendBody`. Connection-specific fields and fields with invalid names or values are dropped, names
    /// lowercased.
    ///
    /// `added` are fields the server adds as it sends the head, after the head's own: written into the frame without
    /// a copy of the head's list to add them to.
    package func sendResponse(
        streamID: Int32, head: HTTPResponseHead, added: HTTP2AddedResponseFields = HTTP2AddedResponseFields(),
        endStream: Bool
    ) throws(HTTP2Error) {
        guard role == .server else { throw HTTP2Error(kind: .invalidState, message: "client cannot send a response") }
        guard let session, !failed else { throw HTTP2Error(kind: .sessionClosed, message: "session closed") }
        guard let stream = lookupStream(streamID), stream.surfaced, !stream.hasProvider, !stream.localEnded else {
            throw HTTP2Error(kind: .invalidStream, message: "stream \(streamID) cannot take a response")
        }
        guard (200...999).contains(head.status) else {
            throw HTTP2Error(kind: .invalidState, message: "status \(head.status) is not a final status")
        }
        let submit = { (nva: UnsafePointer<nghttp2_nv>, count: Int) -> Int32 in
            if endStream {
                return nghttp2_submit_response(session, streamID, nva, count, nil)
            }
            var provider = self.dataProvider
            return nghttp2_submit_response(session, streamID, nva, count, &provider)
        }
        let rc: Int32
        if head.headers.firstIndex(token: .connection) == nil {
            rc = HTTP2Session.withResponseNVArray(status: head.status, headers: head.headers, added: added, submit)
        } else {
            // Fields the Connection field nominates are dropped too: the general path (rare in a response).
            var fields: [(String, String)] = []
            fields.reserveCapacity(head.headers.count + 4)
            fields.append((":status", String(head.status)))
            HTTP2Session.appendOutboundFields(head.headers, isRequest: false, to: &fields)
            if let requestID = added.requestID { fields.append(("x-request-id", requestID)) }
            if let date = added.date { fields.append(("date", date)) }
            if let length = added.contentLength { fields.append(("content-length", String(length))) }
            rc = withNVArray(fields, submit)
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
        guard let stream = lookupStream(streamID), stream.hasProvider, !stream.outboundEnd else {
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
        guard let stream = lookupStream(streamID) else {
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
        guard let stream = lookupStream(streamID) else {
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
        streams[HTTP2StreamKey(streamID)] = stream
        openLocalStreams += 1
        return streamID
    }

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

    /// Calls `body` with an `nghttp2_nv` array for a response head: `:status`, then the fields of `headers` that may be
    /// sent, as ``appendOutboundFields(_:isRequest:to:)`` chooses them for a response without a `Connection` field (the
    /// caller's condition). Made from the fields' bytes: the names lower-cased into one temporary buffer, the values
    /// pointed at where they are; no string per field. The pointers live only during the call (nghttp2 copies).
    static func withResponseNVArray(
        status: Int, headers: HTTPFields, added: HTTP2AddedResponseFields = HTTP2AddedResponseFields(),
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> Int32
    ) -> Int32 {
        headers.withRegions(
            ifEmpty: withResponseNVArray(status: status, entries: nil, bytes: nil, count: 0, added: added, body)
        ) { entries, bytes, header in
            withResponseNVArray(status: status, entries: entries, bytes: bytes, count: header.count, added: added, body)
        }
    }

    private static func withResponseNVArray(
        status: Int, entries: HTTPFieldEntries?, bytes: UnsafeMutablePointer<UInt8>?, count: Int,
        added: HTTP2AddedResponseFields, _ body: (UnsafePointer<nghttp2_nv>, Int) -> Int32
    ) -> Int32 {
        var nameBytes = 0
        if let entries { for index in 0..<count { nameBytes += Int(entries[index].nameCount) } }
        return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: count + 1 + added.count) { nva in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: nameBytes + 10 + added.valueBytes) { buffer in
                let base = buffer.baseAddress!
                // ":status" and its three digits (200...999, checked by the caller) after the names.
                let statusName = base + nameBytes
                var offset = 0
                for byte in ":status".utf8 {
                    statusName[offset] = byte
                    offset += 1
                }
                let digits = statusName + 7
                digits[0] = 0x30 + UInt8(truncatingIfNeeded: status / 100 % 10)
                digits[1] = 0x30 + UInt8(truncatingIfNeeded: status / 10 % 10)
                digits[2] = 0x30 + UInt8(truncatingIfNeeded: status % 10)
                nva[0] = nghttp2_nv(
                    name: statusName, value: digits, namelen: 7, valuelen: 3,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
                var used = 1
                var nameOffset = 0
                if let entries, let bytes {
                    for index in 0..<count {
                        let entry = entries[index]
                        switch entry.token {
                        case .connection, .keepAlive, .proxyConnection, .transferEncoding, .upgrade, .te: continue
                        default: break
                        }
                        let name = bytes + Int(entry.nameStart)
                        let nameCount = Int(entry.nameCount)
                        let value = bytes + Int(entry.valueStart)
                        let valueCount = Int(entry.valueCount)
                        if entry.flags & HTTPFieldEntry.validated == 0 {
                            guard HTTP1Grammar.isToken(UnsafeBufferPointer(start: name, count: nameCount)),
                                HTTP1Grammar.allBytes(
                                    UnsafeBufferPointer(start: value, count: valueCount),
                                    { $0 != 0 && $0 != 0x0a && $0 != 0x0d })
                            else { continue }
                        }
                        // HTTP/2 field names are lower case (RFC 9113 §8.2.1): lower-cased in the copy.
                        let target = base + nameOffset
                        for position in 0..<nameCount { target[position] = HTTP1Grammar.lowercased(name[position]) }
                        nameOffset += nameCount
                        nva[used] = nghttp2_nv(
                            name: target, value: value, namelen: nameCount, valuelen: valueCount,
                            flags: HTTP2Session.indexingFlags(entry.token))
                        used += 1
                    }
                }
                // The added fields' values after the status digits.
                added.write(into: nva.baseAddress!, values: statusName + 10, used: &used)
                return body(nva.baseAddress!, used)
            }
        }
    }

    /// The HPACK flags of a field named `token`: never indexed for credentials (RFC 7541 §7.1.3), and for fields whose
    /// value is new in every message (`x-request-id`, `traceparent`, `tracestate`): indexing those would only fill the
    /// connection's dynamic table with entries never used again, evicting the ones that are (`server`, `content-type`,
    /// `via`), and make the encoder search a table of them for every field it sends.
    @inline(__always)
    static func indexingFlags(_ token: HTTPFieldName) -> UInt8 {
        switch token {
        case .authorization, .proxyAuthorization, .xRequestId, .traceparent, .tracestate:
            return UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        default:
            return UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
        }
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
            let unindexed = HTTP2Session.indexingFlags(HTTPFieldName(name)) != UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
            ranges.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart, unindexed))
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

    /// The data provider: hands queued body bytes to nghttp2, defers when the queue is empty.
    func readOutbound(streamID: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: UnsafeMutablePointer<UInt32>)
        -> Int
    {
        guard let stream = lookupStream(streamID) else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
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
