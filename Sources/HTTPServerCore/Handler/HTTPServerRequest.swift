import HTTPWire
import Locking
import NetCore

/// A request as the server hands it to the handler: the head, a streaming body and where it came from.
package struct HTTPServerRequest: Sendable {
    package var head: HTTPRequestHead
    /// The body, streamed with back-pressure: the connection stops reading while the handler has not taken it.
    /// A request without a body gets an empty, finished stream.
    package var body: ByteStream {
        get { bodyStream ?? ByteStream.complete([]) }
        set { bodyStream = newValue }
    }
    /// The body's stream; nil for a request without a body, whose empty stream is only made if a handler asks.
    private var bodyStream: ByteStream?
    /// Whether the request was sent with a body (`Content-Length` or chunked framing), even an empty one.
    package var hasBody: Bool { bodyStream != nil }
    /// Whether the whole body has arrived (always true without one): reading ``body`` then does not wait.
    package var bodyIsFinished: Bool { bodyStream?.isFinished ?? true }
    /// The status the server answers a request whose body it gave up on, whatever its handler's status: 408 (the
    /// body timeout), 413 (over the body limit) or 400 (malformed framing); nil while the body is fine or when the
    /// client went away. The handler is cancelled then; the answer it still returns goes out with this status.
    package var bodyRejectionStatus: Int? {
        switch bodyStream?.failure as? ByteStreamError {
        case .timedOut: return 408
        case .tooLarge: return 413
        case .malformed: return 400
        case .aborted, nil: return nil
        }
    }
    /// The body's declared length, when the client sent `Content-Length`.
    package var declaredBodyLength: Int64?
    /// For an HTTP/1.1 request that asks to switch protocols (``HTTPWire/HTTPRequestHead/requestedUpgrade``) and has
    /// no body: the bytes the client sends after the handler's `101 Switching Protocols`, streamed with
    /// back-pressure until the client closes (then it finishes). Nil for other requests. The connection reads
    /// nothing past such a request until it is answered; any other answer finishes this stream empty and the
    /// connection goes on with the next request. See ``HTTPServerResponse/Body/stream(_:)`` for the answer that
    /// switches.
    ///
    /// Over HTTP/2, with ``HTTPWire/HTTP2Settings/enableConnectProtocol``, an extended CONNECT (RFC 8441) is presented
    /// as the upgrade it stands for (a GET with `Connection: Upgrade` and `Upgrade: <:protocol>`, version 2), and
    /// this is its stream's DATA, with HTTP/2 flow control as the back-pressure.
    package var upgradeInput: ByteStream?
    package var remoteAddress: SocketAddress?
    /// Whether the request came over TLS (`X-Forwarded-Proto: https`).
    package var isTLS: Bool
    /// The loop serving the connection; async work started for the request should prefer it.
    package var loop: EventLoop
}

extension HTTPServerRequest {
    package init(
        head: HTTPRequestHead, body: ByteStream, declaredBodyLength: Int64?, remoteAddress: SocketAddress?,
        isTLS: Bool, loop: EventLoop
    ) {
        self = .made(
            head: head, bodyStream: body, declaredBodyLength: declaredBodyLength, remoteAddress: remoteAddress,
            isTLS: isTLS, loop: loop)
    }

    /// A request whose body is `bodyStream`, or none when nil.
    ///
    /// Made by the memberwise initializer (which needs no initializer in the type's body): an initializer of its own
    /// assembled the request in one temporary and copied it into another, a retain and a release of each of its
    /// references per request.
    static func made(
        head: consuming HTTPRequestHead, bodyStream: ByteStream?, declaredBodyLength: Int64?,
        remoteAddress: SocketAddress?, isTLS: Bool, loop: EventLoop, upgradeInput: ByteStream? = nil
    ) -> HTTPServerRequest {
        HTTPServerRequest(
            head: head, bodyStream: bodyStream, declaredBodyLength: declaredBodyLength, upgradeInput: upgradeInput,
            remoteAddress: remoteAddress, isTLS: isTLS, loop: loop)
    }
}

/// A response from a handler.
package struct HTTPServerResponse: Sendable {
    /// How the body is supplied.
    package enum Body: Sendable {
        case none
        case bytes([UInt8])
        /// Streamed; sent with `Content-Length` when the head declares one, else chunked (HTTP/1.1) or close-delimited
        /// (HTTP/1.0). The writer waits for the socket to drain before pulling more (back-pressure).
        ///
        /// With status 101, answering a request that has an ``HTTPServerRequest/upgradeInput``, the connection
        /// switches protocols: the head goes out with `Connection: Upgrade` (the handler sets `Upgrade`), then the
        /// stream's bytes as they are, unframed, while the client's bytes go to the request's `upgradeInput`. The
        /// connection closes when the stream ends or fails. A 101 to any other request is answered 500 instead. Over
        /// HTTP/2 the 101 to an extended CONNECT goes out as `200` and the stream as DATA (a 2xx that does not switch
        /// is answered 501, since it would tell the client its tunnel is open).
        case stream(ByteStream)

        /// Whether the body is streamed.
        var isStream: Bool {
            if case .stream = self { return true }
            return false
        }
    }

    package var head: HTTPResponseHead
    package var body: Body
    /// Over HTTP/1.1, close the connection after this response (`Connection: close`, with a lingering close) instead
    /// of reading the next request: for an answer that leaves a large request body unread, which would otherwise be
    /// read and dropped to keep the connection. Over HTTP/2 only the stream ends (the rest of its body is refused).
    package var closesConnection = false
    /// A failure to act out instead of sending this response (see ``HTTPServerResponseFault``); nil sends it.
    package var fault: HTTPServerResponseFault?
    /// Sent as an `X-Request-Id` field after the head's own fields (over HTTP/1.1 and HTTP/2 alike), when set: a
    /// handler whose other fields are shared by many responses (a stub's fixed answer) adds the request's id without
    /// copying them into a list of its own.
    package var requestID: String?

    package init(head: HTTPResponseHead, body: Body = .none) {
        self.head = head
        self.body = body
    }

    /// A response whose ``requestID`` is sent after the head's own fields.
    package init(head: HTTPResponseHead, body: Body, requestID: String) {
        self.head = head
        self.body = body
        self.requestID = requestID
    }

    /// ``head`` with ``requestID``'s field added after its own, for a writer that sends the head's fields as a list.
    package var headWithRequestID: HTTPResponseHead {
        guard let requestID else { return head }
        var head = head
        head.headers.add(knownName: Self.requestIDFieldName, token: .xRequestId, value: requestID)
        return head
    }

    /// The name of the field ``requestID`` is sent in (HTTP/2 sends it lower-cased).
    static var requestIDFieldName: StaticString { "X-Request-Id" }

    package init(status: Int, headers: HTTPFields = HTTPFields(), body: [UInt8]) {
        self.head = HTTPResponseHead(status: status, headers: headers)
        self.body = .bytes(body)
    }
}

/// Handles requests. Called on the connection's loop thread; the returned response is written in request order.
package protocol HTTPServerHandler: Sendable {
    /// The answer to `request`. When the server gives up on the request's body while this runs (see
    /// ``HTTPServerRequest/bodyRejectionStatus``), the task is cancelled and the answer still returned is sent with
    /// the server's status (a byte body; a streamed one is replaced by the server's own error), so a handler that
    /// shapes its errors answers those requests too.
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse

    /// A response the handler can give at once, on the loop thread, without suspending; `nil` (the default) runs
    /// ``handle(_:)`` in a task. A request answered here costs no task: worth it for answers known up front (health
    /// checks, fixed bodies). Must not block.
    func respondImmediately(to request: HTTPServerRequest) -> HTTPServerResponse?

    /// What to do with `request`, decided on the loop thread before any task: answer at once, or run
    /// ``handle(_:context:)`` in a task with what was worked out here (a route, a caller's identity), so that the
    /// task does not work it out again. The default asks ``respondImmediately(to:)``. Must not block.
    func decide(_ request: HTTPServerRequest) -> HTTPServerDecision

    /// ``handle(_:)`` for a request ``decide(_:)`` handed on with `context`. The default ignores the context.
    func handle(_ request: HTTPServerRequest, context: (any AnyObject & Sendable)?) async -> HTTPServerResponse

    /// Begins answering a request ``decide(_:)`` answered with ``HTTPServerDecision/answerLater(context:)``, on the loop
    /// thread: the work starts here and its answer goes to `responder`, on the loop, once. No task is involved unless
    /// the handler makes one. Must not block. The default runs ``handle(_:context:)`` in a task preferring the loop.
    func start(_ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder)

    /// The answer to a request the server refuses before the handler sees it (see ``HTTPServerRejection``), for a
    /// handler that shapes its own errors or logs them. Called on the loop thread; must not block. The status and
    /// the connection's fate stay the server's. The default is ``HTTPServerRejection/defaultResponse``.
    func rejected(_ rejection: HTTPServerRejection) -> HTTPServerResponse
}

/// A handler's decision about a request on the loop thread (see ``HTTPServerHandler/decide(_:)``).
package enum HTTPServerDecision: Sendable {
    /// Sent as it is; no task runs.
    case respond(HTTPServerResponse)
    /// ``HTTPServerHandler/handle(_:context:)`` runs in a task, given `context`.
    case handle(context: (any AnyObject & Sendable)?)
    /// ``HTTPServerHandler/start(_:context:responder:)`` runs on the loop, given `context`, and answers later through
    /// its responder: a request that waits only for callbacks (an upstream exchange) costs no task, over HTTP/1.1
    /// (the request's place in the response order is the responder) and HTTP/2 (its stream is).
    case answerLater(context: (any AnyObject & Sendable)?)
}

extension HTTPServerHandler {
    package func respondImmediately(to request: HTTPServerRequest) -> HTTPServerResponse? { nil }

    package func decide(_ request: HTTPServerRequest) -> HTTPServerDecision {
        guard let response = respondImmediately(to: request) else { return .handle(context: nil) }
        return .respond(response)
    }

    package func handle(_ request: HTTPServerRequest, context: (any AnyObject & Sendable)?) async -> HTTPServerResponse
    {
        await handle(request)
    }
    package func rejected(_ rejection: HTTPServerRejection) -> HTTPServerResponse { rejection.defaultResponse }

    package func start(
        _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder
    ) {
        answerInTask(request, context: context, responder: responder)
    }

    /// ``start(_:context:responder:)``'s default, for a handler whose own `start` hands a request on: runs
    /// ``handle(_:context:)`` in a task preferring the request's loop and gives its answer to `responder` there;
    /// cancelling the responder cancels the task.
    package func answerInTask(
        _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder
    ) {
        let started = UncheckedSendable(responder)
        let loop = request.loop
        let task = Task(executorPreference: loop) {
            let response = await handle(request, context: context)
            loop.executeSoonOrNow { started.value.respond(response) }
        }
        responder.cancellation = TaskCancellation(task: task)
    }
}

/// Cancels the task that answers a request in ``HTTPServerHandler/start(_:context:responder:)``'s default.
private final class TaskCancellation: HTTPServerCancellation {
    let task: Task<Void, Never>
    init(task: Task<Void, Never>) { self.task = task }
    func cancel() { task.cancel() }
}

/// Adapts a closure to ``HTTPServerHandler``.
package struct HTTPHandlerClosure: HTTPServerHandler {
    let body: @Sendable (HTTPServerRequest) async -> HTTPServerResponse
    package init(_ body: @escaping @Sendable (HTTPServerRequest) async -> HTTPServerResponse) { self.body = body }
    package func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse { await body(request) }
}
