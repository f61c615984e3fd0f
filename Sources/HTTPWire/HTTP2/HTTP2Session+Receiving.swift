import CNghttp2

/// What the session receives: nghttp2's callbacks (from HTTP2Callbacks.swift, during `mem_recv` / `mem_send`) turned
/// into checked ``HTTP2Event``s.
extension HTTP2Session {
    func emit(_ event: consuming HTTP2Event) {
        events.append(consume event)
    }

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
            stream.buildsRequest = true
            stream.openedAt = feedTime
            streams[HTTP2StreamKey(streamID)] = stream
            // The header callbacks that follow ask for this stream: found without hashing.
            lastStream = stream
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
        guard let stream = lookupStream(streamID) else { return 0 }
        // Trailers, or the next response head after a 1xx.
        stream.fields.removeAll()
        stream.headerListSize = 0
        return 0
    }

    func onHeader(_ frame: nghttp2_frame, name: String, value: String) -> Int32 {
        guard let stream = lookupStream(frame.hd.stream_id), !stream.rejected else { return 0 }
        stream.headerListSize += name.utf8.count + value.utf8.count + 32
        if stream.headerListSize > Int(settings.maxHeaderListSize) {
            reject(stream, code: .enhanceYourCalm)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        if stream.fields.isEmpty { stream.fields.reserveCapacity(16) }
        stream.fields.append((name, value))
        return 0
    }

    /// A received field as nghttp2's bytes (valid only during the call): a server's request head is built from them
    /// without a string per field; any other block goes on as strings (``onHeader(_:name:value:)``).
    func onHeader(_ frame: nghttp2_frame, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Int32 {
        guard let stream = lookupStream(frame.hd.stream_id), !stream.rejected else { return 0 }
        guard stream.buildsRequest else {
            // Straight into strings (short ones are stored inline). Invalid UTF-8 is repaired, which validation
            // tolerates exactly as it would the raw bytes (obs-text either way).
            return onHeader(
                frame, name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        }
        stream.headerListSize += name.count + value.count + 32
        if stream.headerListSize > Int(settings.maxHeaderListSize) {
            reject(stream, code: .enhanceYourCalm)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        if name.first == UInt8(ascii: ":") {
            stream.request.addPseudoHeader(name: name, value: value)
        } else {
            stream.request.addField(name: name, value: value)
        }
        return 0
    }

    func onInvalidHeader(_ frame: nghttp2_frame) -> Int32 {
        // nghttp2 would silently drop the field; a gateway rejects the whole request instead (RFC 9113 §8.2.1).
        if let stream = lookupStream(frame.hd.stream_id) {
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
            guard let stream = lookupStream(streamID), !stream.rejected else { return 0 }
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
            guard let stream = lookupStream(streamID), !stream.rejected, endStream else { return 0 }
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
        let built: Result<HTTP2ReceivedRequest, RequestError>
        if stream.buildsRequest {
            // Moved out of the stream, which keeps an empty builder.
            var builder = HTTP2RequestBuilder()
            swap(&builder, &stream.request)
            built = builder.finish()
        } else {
            built = HTTP2Validation.validateRequest(stream.fields)
        }
        stream.buildsRequest = false
        switch consume built {
        case .failure:
            reject(stream, code: .protocolError)
        case .success(let request):
            stream.fields.removeAll()
            if let declared = request.contentLength {
                let length = Int(declared)
                stream.contentLength = length
                if endStream && length != 0 && request.head.method != .head {
                    reject(stream, code: .protocolError)
                    return
                }
            }
            stream.surfaced = true
            stream.surfacedInFeed = feedSerial
            emit(.request(streamID: stream.id, head: consume request, endStream: endStream))
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
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let stream = lookupStream(streamID) {
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
        guard let stream = lookupStream(streamID), !stream.rejected, !stream.locallyReset,
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
        // Usually empty: then nothing to hash.
        if !localResetsPending.isEmpty { localResetsPending.remove(streamID) }
        guard let stream = streams.removeValue(forKey: HTTP2StreamKey(streamID)) else { return 0 }
        if lastStream === stream { lastStream = nil }
        if role == .client { openLocalStreams -= 1 }
        if stream.unconsumed > 0, let session {
            // The stream is gone: give its unacknowledged bytes back to the connection window.
            _ = nghttp2_session_consume_connection(session, stream.unconsumed)
        }
        guard stream.surfaced else { return 0 }
        if role == .server && stream.surfacedInFeed == feedSerial && !stream.localEnded {
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
}
