import CNghttp2

// The only place where nghttp2 calls back into Swift. Every callback is a non-capturing closure converted to a C
// function pointer; the session arrives through `user_data` as an unretained `HTTP2Session`. That is safe because
// the `HTTP2Session` owns the `nghttp2_session`, deletes it in `deinit`, and nghttp2 only calls back from inside
// `nghttp2_session_mem_recv` / `nghttp2_session_mem_send`, which the session itself calls.

extension HTTP2Session {
    @inline(__always)
    fileprivate static func from(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session? {
        guard let userData else { return nil }
        return Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
    }

    /// Builds the callback table. The caller deletes it after creating the session (nghttp2 copies it).
    static func makeCallbacks() -> OpaquePointer? {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }

        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let session = HTTP2Session.from(userData), let frame else {
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            return session.onBeginHeaders(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, userData in
            guard let session = HTTP2Session.from(userData), let frame else {
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            return session.onHeader(
                frame.pointee, name: UnsafeRawBufferPointer(start: name, count: name == nil ? 0 : nameLength),
                value: UnsafeRawBufferPointer(start: value, count: value == nil ? 0 : valueLength))
        }
        nghttp2_session_callbacks_set_on_invalid_header_callback(callbacks) { _, frame, _, _, _, _, _, userData in
            guard let session = HTTP2Session.from(userData), let frame else {
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            return session.onInvalidHeader(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let session = HTTP2Session.from(userData), let frame else {
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            return session.onFrameReceived(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let session = HTTP2Session.from(userData), let frame else {
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            return session.onFrameSent(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            _, flags, streamID, data, length, userData in
            guard let session = HTTP2Session.from(userData) else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
            return session.onDataChunk(streamID: streamID, bytes: bytes)
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            guard let session = HTTP2Session.from(userData) else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
            return session.onStreamClose(streamID: streamID, errorCode: errorCode)
        }
        return callbacks
    }

    /// The data provider for every outbound body: reads from the stream's queue in the session.
    static func makeDataProvider() -> nghttp2_data_provider {
        nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) {
            _, streamID, buffer, length, dataFlags, _, userData in
            guard let session = HTTP2Session.from(userData), let buffer, let dataFlags else {
                return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
            }
            return session.readOutbound(
                streamID: streamID, into: UnsafeMutableRawBufferPointer(start: buffer, count: length),
                flags: dataFlags)
        }
    }
}
