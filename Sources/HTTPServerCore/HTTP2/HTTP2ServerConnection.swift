import HTTP2Transport
import HTTPWire
import Locking
import NetCore
import RingQueue

/// Serves HTTP/2 on one connection with an ``HTTP2Session`` (nghttp2) in server mode: every request stream goes to
/// the same ``HTTPServerHandler`` as HTTP/1.1, bodies flow with real back-pressure both ways, reset streams cancel
/// their handler, and drain, idle and send timeouts end the connection with GOAWAY.
///
/// - Input: bytes are fed to the session, then its events are handled, then its output is written in one write.
/// - Request bodies: DATA is acknowledged to the peer (`consumed`) only once the handler has taken it from the
///   request's ``ByteStream``, so a slow handler closes the peer's flow-control window.
/// - Responses: the head and body go through `sendResponse`/`sendBody`; a streamed body waits for
///   `.windowAvailable` whenever the stream's queue is full.
/// - Work in flight: at most `maxConcurrentStreams` handler tasks run per connection, counting tasks of reset
///   streams until they have actually finished; requests beyond that are refused with REFUSED_STREAM. A request's
///   handler starts once the read burst it came in has been processed (in the same loop round, so no later), so a
///   stream opened and reset in one burst never starts one; a client that cancels streams faster than they complete
///   is told GOAWAY by the session (``HTTPWire/HTTP2ResetBudget``).
/// - Minimum rates: a response held behind a window the client keeps (nearly) shut, and a request body that trickles
///   in, are cut below ``HTTPServerLimits/minSendRate`` and ``HTTPServerLimits/minReceiveRate``.
///
/// Lives on its connection's loop thread. The state each request touches is marked `@exclusivity(unchecked)`: only that
/// thread uses it, and no access to it spans a call out (a handler, the session), so the runtime's dynamic check would
/// buy nothing.
final class HTTP2ServerConnection: HTTPServerConnectionHandler, HTTP2Connection {
    /// One request stream.
    final class Stream: HTTPServerResponder {
        let id: Int32
        let isHead: Bool
        /// What runs the handler and the response: a worker of the loop's pool, or a task of its own.
        var worker: HTTP2StreamWorker?
        var task: Task<Void, Never>?
        /// The request body while the peer is still sending it.
        var body: ByteStream?
        var bodyBytes: Int64 = 0
        /// The request's `content-length`, if it has one.
        var declaredLength: Int64?
        /// Body bytes handed to `body` that the handler has not taken yet (not acknowledged to the peer).
        var pendingAck = 0
        /// Request body bytes are acknowledged and dropped (the response is complete or was made by us).
        var discardBody = false
        var lastBodyProgress: UInt64
        /// The response head was submitted.
        var responded = false
        /// Reset or closed: nothing more is sent and the handler's result is dropped.
        var finished = false
        /// The status the server gave the request when its body went over the limit: the handler's answer goes out
        /// with it, or the server's own once ``HTTP1ServerConnection/failedAnswerGrace`` has passed.
        var failedStatus: Int?
        var failedAt: UInt64 = 0
        /// The response pump waiting for the peer's window; resumed with false when the stream ends.
        var windowWaiter: CheckedContinuation<Bool, Never>?
        /// An extended CONNECT (RFC 8441) until it is refused: its DATA frames are the tunnel's bytes (the request's
        /// ``HTTPServerRequest/upgradeInput``), with no body limit and no body timeout.
        var isTunnel = false
        /// Send-stall tracking: outbound bytes queued at the last sweep and since when they have not moved.
        var stalledBuffered = 0
        var stalledSince: UInt64 = 0
        /// Whether the response keeps up ``HTTPServerLimits/minSendRate`` while the stream's window holds it back.
        var sendRate = MinimumRate()
        /// Whether the request body keeps up ``HTTPServerLimits/minReceiveRate`` while the client may send it.
        var receiveRate = MinimumRate()
        /// The request was held back (the client cancels streams faster than they complete): it starts when released.
        var held = false
        // A request answered later (`answerLater`): the stream is its responder. Loop-confined, and each of these is
        // read, assigned or taken whole (a cancellation taken out is called after): no dynamic exclusivity check.
        /// The connection the answer goes to, until it is given.
        @exclusivity(unchecked) var answering: HTTP2ServerConnection?
        /// What the compression of the answer looks at (set once `start` returned without answering).
        @exclusivity(unchecked) var compressedFor: HTTPRequestHead?
        /// An answer given inside `start`, sent once it returned.
        @exclusivity(unchecked) var earlyAnswer: HTTPServerResponse?
        @exclusivity(unchecked) var cancellation: (any HTTPServerCancellation)?
        @exclusivity(unchecked) private(set) var isCancelled = false

        init(id: Int32, isHead: Bool, now: UInt64) {
            self.id = id
            self.isHead = isHead
            self.lastBodyProgress = now
        }

        func respond(_ response: consuming HTTPServerResponse) {
            guard let connection = answering.take() else { return }
            cancellation = nil
            if connection.startingHandler {
                earlyAnswer = consume response
            } else if let request = compressedFor.take(), let compressor = connection.context.compressor {
                connection.answered(
                    self, with: compressor.compress(response, for: request, on: connection.connection.loop))
            } else {
                connection.answered(self, with: response)
            }
        }

        /// Tells the work started for a later answer that the server gave up on the request.
        func cancelLaterAnswer() {
            guard answering != nil, !isCancelled else { return }
            isCancelled = true
            cancellation.take()?.cancel()
        }
    }

    let connection: Connection
    let context: HTTPServerLoopContext
    let session: HTTP2Session
    @exclusivity(unchecked) var streams: [HTTP2StreamKey: Stream] = [:]
    /// Handler tasks started and not finished yet (including those of reset streams), and requests waiting to start
    /// theirs (see ``arrived``).
    @exclusivity(unchecked) var runningTasks = 0
    /// Set while a handler's `start` runs (see ``Stream/respond(_:)``).
    @exclusivity(unchecked) var startingHandler = false
    /// Requests that arrived in the read burst at hand: their handlers start once it has been processed (see
    /// ``dispatchArrived()``).
    @exclusivity(unchecked) var arrived = RingQueue<(request: HTTPServerRequest, stream: Stream)>(initialCapacity: 8)
    /// Whether ``dispatchArrived()`` is scheduled.
    @exclusivity(unchecked) var dispatchScheduled = false
    /// Requests held back for ``heldStreamDelay`` because the client has cancelled as many more streams than it let
    /// complete as its budget allows (``HTTPWire/HTTP2Session/holdsNewStreams``), and the timer that releases them.
    @exclusivity(unchecked) var held: [(request: HTTPServerRequest, stream: Stream)] = []
    var holdTimer: LoopTimer?
    /// How long a new stream of such a client waits before its handler starts: a stream it cancels at once starts
    /// nothing, and that cancellation ends the connection (GOAWAY); one it lets run is served that much later.
    static let heldStreamDelay: Duration = .milliseconds(100)
    /// Whether responses keep up ``HTTPServerLimits/minSendRate`` while bytes wait in the socket's queue, and while the
    /// connection's window holds every stream back.
    @exclusivity(unchecked) var socketSendRate = MinimumRate()
    @exclusivity(unchecked) var windowSendRate = MinimumRate()
    /// When the minimum rates were last checked (loop time).
    @exclusivity(unchecked) var lastRateCheck: UInt64 = 0
    let maxRunningTasks: Int
    @exclusivity(unchecked) var flushScheduled = false
    @exclusivity(unchecked) var lastActivity = EventLoop.now()
    private var peerFinished = false
    var draining = false
    var finalGoAwaySent = false
    var drainTimer: LoopTimer?
    private var closing = false
    /// The most of an unread, declared request body let in (and dropped) after a complete response rather than
    /// stopped with a reset (see ``responseComplete(_:)``).
    static let drainedBodyAllowance: Int64 = 64 * 1024
    /// Delay between the GOAWAY shutdown notice and the final GOAWAY (about a round trip).
    static let drainNoticeDelay: Duration = .milliseconds(250)

    init(connection: Connection, context: HTTPServerLoopContext) throws {
        self.connection = connection
        self.context = context
        self.session = try HTTP2Session(role: .server, settings: context.http2SessionSettings)
        self.maxRunningTasks = max(1, Int(context.http2Settings.maxConcurrentStreams))
    }

    // MARK: ConnectionDelegate

    func connectionDidBecomeActive(_ connection: Connection) {
        lastActivity = EventLoop.now()
        flush()
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard !closing else { return }
        receive(bytes)
    }

    func connectionDidReadEOF(_ connection: Connection) {
        peerFinished = true
        // An HTTP/2 client ends a stream with END_STREAM, never with a TCP half-close: an EOF means it has gone.
        if streams.isEmpty || context.limits.abandonsRequestsOnClientEOF {
            connection.close()
        }
    }

    func connectionDidDrainWrites(_ connection: Connection) {
        writesDrained()
    }

    func connectionDidClose(_ connection: Connection, error: (any Error)?) {
        closing = true
        drainTimer?.cancel()
        drainTimer = nil
        holdTimer?.cancel()
        holdTimer = nil
        held.removeAll()
        for stream in streams.values { end(stream) }
        streams.removeAll()
        context.connectionClosed(connection)
    }

    // MARK: Output (HTTP2Connection: `flush`, `scheduleFlush`)

    /// A client that has gone (EOF) is done with once its last stream has ended.
    var closesWhenFlushed: Bool { peerFinished && streams.isEmpty }

    /// The session is over (a GOAWAY sent after its last stream, as a drain or an abuse ends it): the close lingers
    /// unless the client has closed its side. A client that has not read the GOAWAY yet is still sending (the
    /// acknowledgement of a SETTINGS or PING, a WINDOW_UPDATE for the last DATA, a stream it opened meanwhile), and a
    /// socket closed with those bytes unread is reset: the reset throws away what the kernel has not sent yet, the
    /// last streams' answers included, which the client then never sees.
    func closeAfterOutput() {
        closeAfterFlush(lingering: true)
    }

    /// Closes once the output is written; `lingering`: the client may still be sending (frames sent before it read
    /// the GOAWAY, or a flood), so the connection reads and drops its bytes for a while rather than resetting under the
    /// last frames (see
    /// ``NetCore/Connection/closeAfterFlush(lingering:)``).
    func closeAfterFlush(lingering: Bool = false) {
        guard !closing else { return }
        closing = true
        connection.closeAfterFlush(lingering: lingering && !peerFinished ? context.limits.lingeringClose : nil)
    }

    /// A fatal session error: write what the session has (it may hold a GOAWAY), and a GOAWAY naming the error when
    /// the session sent none (a CONTINUATION or acknowledgement flood), then close. The close lingers, so that a
    /// client still sending reads the GOAWAY, unless the client does not read at all (an acknowledgement flood: the
    /// answers to its SETTINGS or PINGs piled up unread), which would only keep the connection open for nothing.
    func sessionFailed(_ error: HTTP2Error) {
        var output = remainingOutput()
        output.append(contentsOf: session.goAwayFrame(after: error))
        connection.write(output)
        closeAfterFlush(lingering: error.kind != .flooded)
    }

    // MARK: Events

    /// Acts on one of the session's events (see ``HTTP2Transport/HTTP2Connection/processEvents()``).
    func handle(_ event: consuming HTTP2Event) {
        switch consume event {
        case .request(let streamID, let request, let endStream):
            let (head, extendedProtocol, declaredLength) = (consume request).parts()
            startRequest(
                streamID: streamID, head: consume head, extendedProtocol: extendedProtocol,
                declaredLength: declaredLength, endStream: endStream)
        case .requestBody(let streamID, let bytes):
            receiveBody(streamID: streamID, bytes: bytes)
        case .requestEnd(let streamID):
            if let stream = streams[HTTP2StreamKey(streamID)] {
                stream.body?.finish()
                stream.body = nil
            }
        case .streamReset(let streamID, _):
            if let stream = streams[HTTP2StreamKey(streamID)] { end(stream) }
        case .streamClosed(let streamID):
            if let stream = streams.removeValue(forKey: HTTP2StreamKey(streamID)) { end(stream) }
            lastActivity = connection.loop.roundTime
            streamsChanged()
        case .windowAvailable(let streamID):
            if let stream = streams[HTTP2StreamKey(streamID)], let waiter = stream.windowWaiter {
                stream.windowWaiter = nil
                waiter.resume(returning: true)
            }
        case .goaway, .trailers, .remoteSettingsChanged, .response, .responseBody, .responseEnd:
            break
        }
    }

    /// The stream is over (reset or closed): cancel its handler, abort its body, stop its response.
    func end(_ stream: Stream) {
        stream.finished = true
        cancelHandler(of: stream)
        stream.body?.fail(ByteStreamError.aborted)
        stream.body = nil
        if let waiter = stream.windowWaiter {
            stream.windowWaiter = nil
            waiter.resume(returning: false)
        }
    }

    private func streamsChanged() {
        guard streams.isEmpty else { return }
        if draining && !finalGoAwaySent { sendFinalGoAway() }
    }
}
