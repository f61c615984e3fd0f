import CNghttp2

/// Which end of the connection a session plays.
package enum HTTP2Role: Sendable, Hashable {
    case server
    case client
}

/// An HTTP/2 error code (RFC 9113 §7) as carried by RST_STREAM and GOAWAY.
package struct HTTP2ErrorCode: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package init(_ rawValue: UInt32) { self.rawValue = rawValue }

    package static let noError = HTTP2ErrorCode(0x0)
    package static let protocolError = HTTP2ErrorCode(0x1)
    package static let internalError = HTTP2ErrorCode(0x2)
    package static let flowControlError = HTTP2ErrorCode(0x3)
    package static let settingsTimeout = HTTP2ErrorCode(0x4)
    package static let streamClosed = HTTP2ErrorCode(0x5)
    package static let frameSizeError = HTTP2ErrorCode(0x6)
    package static let refusedStream = HTTP2ErrorCode(0x7)
    package static let cancel = HTTP2ErrorCode(0x8)
    package static let compressionError = HTTP2ErrorCode(0x9)
    package static let connectError = HTTP2ErrorCode(0xa)
    package static let enhanceYourCalm = HTTP2ErrorCode(0xb)
    package static let inadequateSecurity = HTTP2ErrorCode(0xc)
    package static let http11Required = HTTP2ErrorCode(0xd)

    package var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
            "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
            "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"
        ]
        return rawValue < names.count ? names[Int(rawValue)] : "0x\(String(rawValue, radix: 16))"
    }
}

/// A fatal session error, or a misuse of the API. After a fatal error (`isFatal`) the caller should drain any
/// output (it may hold a GOAWAY) and close the connection.
package struct HTTP2Error: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        /// The client did not start with the HTTP/2 connection preface.
        case badPreface
        /// The peer queued too many frames that need an answer (SETTINGS/PING ACK flood) or other flood.
        case flooded
        /// A header block was split over more CONTINUATION frames than allowed.
        case tooManyContinuations
        /// Another fatal protocol or library error; `code` holds nghttp2's error.
        case sessionError
        /// The session already failed or was closed.
        case sessionClosed
        /// The stream does not exist (any more) or is in the wrong state for the call.
        case invalidStream
        /// The call does not fit the session's role or state (for example a server sending a request).
        case invalidState
        /// No stream may be opened now (GOAWAY, IDs exhausted).
        case streamsExhausted
    }

    package var kind: Kind
    /// nghttp2's error code (negative), or 0 when the error is ours.
    package var code: Int32
    package var message: String

    package init(kind: Kind, code: Int32 = 0, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    init(nghttp2Code code: Int32) {
        let kind: Kind
        switch code {
        case NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue: kind = .badPreface
        case NGHTTP2_ERR_FLOODED.rawValue: kind = .flooded
        case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue: kind = .tooManyContinuations
        default: kind = .sessionError
        }
        self.init(kind: kind, code: code, message: String(cString: nghttp2_strerror(code)))
    }

    /// The GOAWAY a server sends when this fatal error ends the connection (nil when none is sent: a client that did
    /// not start with the preface may not speak HTTP/2 at all): the error code and debug data naming the reason.
    package var goAway: HTTP2GoAway? {
        switch kind {
        case .badPreface, .invalidStream, .invalidState, .streamsExhausted: return nil
        case .tooManyContinuations: return HTTP2GoAway(errorCode: .enhanceYourCalm, debugData: "CONTINUATION flood")
        case .flooded:
            return HTTP2GoAway(
                errorCode: .enhanceYourCalm, debugData: "flood of frames to acknowledge (SETTINGS, PING)")
        case .sessionError, .sessionClosed: return HTTP2GoAway(errorCode: .internalError, debugData: message)
        }
    }

    /// Whether the connection must be closed.
    package var isFatal: Bool {
        switch kind {
        case .badPreface, .flooded, .tooManyContinuations, .sessionError, .sessionClosed: return true
        case .invalidStream, .invalidState, .streamsExhausted: return false
        }
    }

    package var description: String { "HTTP2Error(\(kind), \(code)): \(message)" }
}

/// Connection settings and abuse limits for one `HTTP2Session`.
package struct HTTP2Settings: Sendable, Hashable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS we advertise. Excess peer streams get RST_STREAM(REFUSED_STREAM).
    package var maxConcurrentStreams: UInt32 = 100
    /// SETTINGS_INITIAL_WINDOW_SIZE we advertise: how much DATA a peer may send per stream before `consumed`.
    package var initialWindowSize: UInt32 = 65_535
    /// Our connection-level receive window (the peer's budget for all streams together).
    package var connectionWindowSize: Int32 = 1 << 20
    /// SETTINGS_MAX_FRAME_SIZE we advertise (16384...16777215).
    package var maxFrameSize: UInt32 = 16_384
    /// SETTINGS_MAX_HEADER_LIST_SIZE we advertise and enforce (RFC 9113 size: name + value + 32 per field).
    /// A larger header block resets the stream with ENHANCE_YOUR_CALM and is never surfaced.
    package var maxHeaderListSize: UInt32 = 32 * 1024
    /// SETTINGS_HEADER_TABLE_SIZE for the HPACK decoder.
    package var headerTableSize: UInt32 = 4096
    /// Server only: token bucket for RST_STREAM frames received (CVE-2023-44487), whatever stream they name. When it
    /// runs dry the session ends the connection with GOAWAY(ENHANCE_YOUR_CALM) and debug data saying why (nghttp2's
    /// own bucket, which would send GOAWAY(INTERNAL_ERROR) without a reason, is set to twice this as a backstop).
    /// nghttp2's defaults are burst 1000, 33 per second.
    package var streamResetBurst: UInt64 = 1000
    package var streamResetRate: UInt64 = 33
    /// Server only: streams the peer may cancel (RST_STREAM) before their responses are complete, within
    /// ``prematureResetAge`` of opening them, beyond the streams it let complete (see ``HTTP2ResetBudget``). At this
    /// many, new streams are held back briefly before their handlers start; one more cancellation, and the connection
    /// is told GOAWAY(ENHANCE_YOUR_CALM) and takes no new stream. So a client that cancels every stream (rapid reset),
    /// each reset in a packet of its own, gets at most this many requests started. nil: the concurrent-stream limit
    /// (``maxConcurrentStreams``).
    package var maxPrematureResets: Int? = nil
    /// Server only: a stream reset later than this after it opened is not counted by ``maxPrematureResets``.
    package var prematureResetAge: Duration = .seconds(1)
    /// CONTINUATION frames allowed after one HEADERS (CVE-2024-28182). More is fatal.
    package var maxContinuations: Int = 8
    /// Outgoing SETTINGS/PING ACKs allowed to queue unsent before the peer counts as flooding (fatal).
    package var maxOutboundAck: Int = 1000
    /// Entries allowed in one SETTINGS frame.
    package var maxSettingsEntries: Int = 32
    /// Server only: after this many requests the server sends a graceful GOAWAY whose last-stream-id is the
    /// last accepted request; `nil` for no cap.
    package var maxRequestsPerConnection: Int? = 1000
    /// Resets the *session* sends because of peer behaviour (malformed requests, refused streams, flow control
    /// errors: the "MadeYouReset" class, CVE-2025-8671) allowed per connection before it is closed with
    /// GOAWAY(ENHANCE_YOUR_CALM). Resets requested through `resetStream` are not counted.
    package var maxPeerInducedResets: Int = 1000
    /// Consecutive DATA frames with an empty payload and no END_STREAM allowed before the connection is closed with
    /// GOAWAY(ENHANCE_YOUR_CALM) (the empty-frames flood, CVE-2019-9518). Any DATA frame with a payload resets the
    /// count.
    package var maxConsecutiveEmptyDataFrames: Int = 100
    /// Per-stream outbound buffer: `sendBody` returns `false` (pause the producer) once this many bytes are
    /// queued; `.windowAvailable` follows when the queue drains below half.
    package var streamSendBufferSize: Int = 64 * 1024
    /// Server only: advertise SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441), so that clients may open WebSockets (and
    /// other protocols) with an extended CONNECT (`:method CONNECT` with `:protocol`). Off by default: a handler
    /// that does not relay tunnels must not be offered them.
    package var enableConnectProtocol = false

    package init() {}
}

/// The head of an HTTP/2 request a client sends: the pseudo-header fields and the regular fields. (A server session
/// hands out what it receives as an ``HTTP2ReceivedRequest``.)
package struct HTTP2RequestHead: Sendable, Hashable {
    package var method: HTTPMethod
    /// `:scheme`; nil only for CONNECT.
    package var scheme: String?
    /// `:authority`, if sent (a request may carry `host` instead).
    package var authority: String?
    /// `:path`; nil only for CONNECT.
    package var path: String?
    /// `:protocol` of an extended CONNECT (RFC 8441), if any.
    package var extendedProtocol: String?
    /// Regular fields, lowercase names, in the order received. Includes `host` if the client sent one.
    package var headers: HTTPFields

    package init(
        method: HTTPMethod, scheme: String? = "https", authority: String?, path: String?,
        extendedProtocol: String? = nil, headers: HTTPFields = HTTPFields()
    ) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.extendedProtocol = extendedProtocol
        self.headers = headers
    }

    /// A request head for an HTTP/1.1 request, for sending over HTTP/2: `Host` becomes `:authority` (unless
    /// `authority` is given) and the target becomes `:path`.
    package init(_ head: HTTPRequestHead, scheme: String = "https", authority: String? = nil) {
        var headers = head.headers
        let host = authority ?? headers.first(name: "host")
        headers.remove(name: "host")
        if head.method == .connect {
            self.init(method: head.method, scheme: nil, authority: host ?? head.target, path: nil, headers: headers)
        } else {
            self.init(method: head.method, scheme: scheme, authority: host, path: head.target, headers: headers)
        }
    }
}

/// Something that happened on the connection; read with `HTTP2Session.nextEvent()`.
package enum HTTP2Event: Sendable, Hashable {
    /// Server: a complete, valid request head, in its HTTP/1.1 form. `endStream` means there is no body.
    case request(streamID: Int32, head: HTTP2ReceivedRequest, endStream: Bool)
    /// Server: request body bytes. Call `consumed(streamID:count:)` once they have been passed on.
    case requestBody(streamID: Int32, bytes: [UInt8])
    /// Server: the request body is complete.
    case requestEnd(streamID: Int32)
    /// Client: the final response head (1xx heads are skipped). `endStream` means there is no body.
    case response(streamID: Int32, head: HTTPResponseHead, endStream: Bool)
    /// Client: response body bytes. Call `consumed(streamID:count:)` once they have been passed on.
    case responseBody(streamID: Int32, bytes: [UInt8])
    /// Client: the response is complete.
    case responseEnd(streamID: Int32)
    /// Trailer fields; `.requestEnd` / `.responseEnd` follows.
    case trailers(streamID: Int32, headers: HTTPFields)
    /// A stream already surfaced ended abnormally: the peer reset it, or the session reset it because of a
    /// protocol violation (for example DATA beyond `content-length`). Cancel work for it. Not emitted for
    /// resets you asked for with `resetStream`.
    case streamReset(streamID: Int32, errorCode: HTTP2ErrorCode)
    /// A stream already surfaced is gone; always its last event.
    case streamClosed(streamID: Int32)
    /// The peer sent GOAWAY: streams above `lastStreamID` were not processed and may be retried elsewhere.
    case goaway(lastStreamID: Int32, errorCode: HTTP2ErrorCode)
    /// The outbound queue of a stream for which `sendBody` returned `false` drained below half: send more.
    case windowAvailable(streamID: Int32)
    /// The peer's SETTINGS arrived (for example MAX_CONCURRENT_STREAMS changed; check `canOpenStream`).
    case remoteSettingsChanged
}

extension HTTP2Event {
    /// The stream an event belongs to, nil for connection-level events.
    package var streamID: Int32? {
        switch self {
        case .request(let id, _, _), .requestBody(let id, _), .requestEnd(let id), .response(let id, _, _),
            .responseBody(let id, _), .responseEnd(let id), .trailers(let id, _), .streamReset(let id, _),
            .streamClosed(let id), .windowAvailable(let id):
            return id
        case .goaway, .remoteSettingsChanged:
            return nil
        }
    }
}

/// A GOAWAY the session sent or is to send because of the peer: the error code and the debug data that names the
/// reason (RFC 9113 §6.8: diagnostic data, here a short ASCII text).
package struct HTTP2GoAway: Sendable, Hashable, CustomStringConvertible {
    package var errorCode: HTTP2ErrorCode
    package var debugData: String

    package init(errorCode: HTTP2ErrorCode, debugData: String) {
        self.errorCode = errorCode
        self.debugData = debugData
    }

    package var description: String { "GOAWAY(\(errorCode), \"\(debugData)\")" }

    /// The frame as it goes on the wire, with `lastStreamID` (RFC 9113 §6.8).
    package func frame(lastStreamID: Int32) -> [UInt8] {
        let debug = Array(debugData.utf8.prefix(256))
        let length = 8 + debug.count
        var frame: [UInt8] = [
            UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length), 0x7, 0, 0, 0, 0, 0
        ]
        let last = UInt32(bitPattern: max(0, lastStreamID)) & 0x7fff_ffff
        for shift in [24, 16, 8, 0] { frame.append(UInt8(truncatingIfNeeded: last >> UInt32(shift))) }
        for shift in [24, 16, 8, 0] { frame.append(UInt8(truncatingIfNeeded: errorCode.rawValue >> UInt32(shift))) }
        frame.append(contentsOf: debug)
        return frame
    }
}
