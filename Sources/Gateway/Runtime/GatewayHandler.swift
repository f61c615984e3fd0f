import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Moya
import NetCore
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The gateway's request handler: route, authorise the caller, send the call through the upstream's Moya provider
/// (stubs, plugins, coalescing) and map the result to a response, with one access-log line per request.
final class GatewayHandler: HTTPServerHandler {
    private let state: GatewayStateBox
    private let requestIDs = RequestIDGenerator()
    /// Requests in `handle` now: the drain waits for the ones the server cancelled to write their access-log line.
    let running = Atomic<Int>(0)
    /// Relayed responses (long bodies, WebSocket tunnels) whose access-log line is not written yet: the drain waits
    /// for the ones it cut too.
    private let relaying = AtomicCounter()
    /// Open WebSocket tunnels: a drain sends them their Close (see ``goAwayTunnels()``).
    private let openTunnels = OpenTunnels()
    /// Response buffering (`server.buffering`); nil relays every long body at its client's pace.
    private let buffering: ResponseBuffering?
    /// `moya-gateway record`: what the proxied traffic is recorded into (nil when serving).
    let recorder: ExchangeRecorder?
    /// The longest upstream body collected (not relayed as it arrives): longer when recording, so that a body up to
    /// the recorder's per-body cap can be recorded.
    let collectLimit: Int

    init(state: GatewayStateBox, buffering: ResponseBuffering? = nil, recorder: ExchangeRecorder? = nil) {
        self.state = state
        self.buffering = buffering
        self.recorder = recorder
        collectLimit =
            recorder.map { max(StreamedBodyRelay.collectLimit, $0.limits.maxBodyBytes) }
            ?? StreamedBodyRelay.collectLimit
    }

    /// Routes the request and authorises its caller on the event loop, with no task: what needs no upstream is
    /// answered at once (routing errors, 401, 403, 429: a scan of unknown paths or a flood without a key costs no
    /// task), and so is a stub upstream without latency, whose whole Moya pipeline runs synchronously (see
    /// `MoyaProvider.requestImmediately`). An upstream call is handed to ``handle(_:context:)`` as decided, so the
    /// task neither routes again nor takes a rate limit's token twice.
    func decide(_ request: HTTPServerRequest) -> HTTPServerDecision {
        let started = ContinuousClock.now
        var exchange = Exchange(request: request, snapshot: state.current, generator: requestIDs, started: started)
        let call: Call
        switch prepare(&exchange, request: request) {
        case .answer(let response):
            return .respond(finish(&exchange, response: response, started: started))
        case .call(let decided):
            call = decided
        }
        if let responder = call.upstream.responder, !call.route.config.coalesce, call.upstream.breaker == nil,
            request.declaredBodyLength ?? 0 == 0, request.bodyIsFinished
        {
            // A stub with a responder: its answer is drawn here, once; an immediate one is given at once. A spy's
            // request that no recorded response matches goes on to the upstream.
            let answer = stubAnswer(responder, exchange: exchange, request: request, call: call, body: [])
            if answer.unmatched && call.upstream.client != nil {
                return .handle(context: DecidedCall(exchange: consume exchange, call: call))
            }
            exchange.record.stubbed = true
            if answer.delay <= 0 {
                let target = call.target(
                    for: exchange.caller, request: request, body: [],
                    forwardsHeaders: call.upstream.logsExchanges, stubAnswer: answer)
                if let result = call.upstream.provider.requestImmediately(MultiTarget(target)) {
                    let response = stubResponse(
                        for: result, answer: answer, call: call, request: request, exchange: &exchange)
                    return .respond(finish(&exchange, response: response, started: started))
                }
            }
            return .handle(context: DecidedCall(exchange: consume exchange, call: call, stub: answer))
        }
        if !call.route.config.coalesce, call.upstream.answersInstantly, call.upstream.breaker == nil,
            request.declaredBodyLength ?? 0 == 0, request.bodyIsFinished
        {
            if let canned = call.upstream.cannedAnswer {
                return .respond(
                    finish(&exchange, response: canned.response(requestID: exchange.requestID), started: started))
            }
            let target = call.target(
                for: exchange.caller, request: request, body: [],
                forwardsHeaders: call.upstream.logsExchanges)
            // An instant stub answers `.immediate`: the provider only declines an endpoint it cannot map, which
            // the task then reports.
            if let result = call.upstream.provider.requestImmediately(MultiTarget(target)) {
                let answer = response(
                    for: result, call: call, isHead: MethodTest.isHead(request.head.method), exchange: &exchange)
                return .respond(finish(&exchange, response: answer, started: started))
            }
        }
        if answersOnLoop(call, request: request) {
            return .answerLater(
                context: LoopCall(
                    handler: self, exchange: consume exchange, call: consume call,
                    isHead: MethodTest.isHead(request.head.method)))
        }
        return .handle(context: DecidedCall(exchange: consume exchange, call: call))
    }

    /// An upstream call as ``decide(_:)`` left it for the task: the exchange is moved in, and the task fills it in
    /// place (no copy of its access-log record).
    final class DecidedCall: @unchecked Sendable {
        // Made on the loop and used only by the task it is handed to (which starts after it is made).
        @exclusivity(unchecked) var exchange: Exchange
        /// Taken (moved out) by the task: read in place, it was copied for the call across the suspension, a
        /// reference count per field, and destroyed twice.
        @exclusivity(unchecked) var call: Call?
        /// A stub responder's answer, drawn in `decide` (a sequence steps once per request).
        let stub: StubAnswer?

        init(exchange: consuming Exchange, call: Call, stub: StubAnswer? = nil) {
            self.exchange = exchange
            self.call = call
            self.stub = stub
        }
    }

    /// A request the server refused before routing (malformed, over a limit, too slow, an unmet expectation): the
    /// gateway's JSON error with a request id (`payload_too_large` for 413, else `bad_request`; the status stays the
    /// server's), and an access-log line like any other request's (`route` null, `-` where the head was not read).
    func rejected(_ rejection: HTTPServerRejection) -> HTTPServerResponse {
        let head = rejection.head
        let requestID = RequestID.take(from: head?.headers.first(.xRequestId), generator: requestIDs)
        var record = AccessRecord(
            requestID: requestID, method: head?.method.rawValue ?? "-", path: head?.target ?? "-",
            bytesIn: 0)
        record.status = rejection.status
        record.upstreamError = "rejected: \(HTTPServerErrorCode.code(for: rejection.status))"
        record.clientAddress = ClientAddress.of(
            peer: rejection.remoteAddress?.host, headers: head?.headers,
            trusted: state.current.config.server.trustedProxies)
        record.traceID = head.flatMap { TraceContext.traceID(in: $0.headers) }
        state.current.telemetry.record(record)
        // The server keeps its own status (431, 414, ...); the body names the nearest of the gateway's codes.
        return errorResponse(rejection.status == 413 ? .payloadTooLarge : .badRequest, requestID: requestID)
    }

    func handle(_ request: HTTPServerRequest, context: (any AnyObject & Sendable)?) async -> HTTPServerResponse {
        guard let decided = context as? DecidedCall, let call = decided.call.take() else {
            return await handle(request)
        }
        running.add(1, ordering: .relaxed)
        defer { running.subtract(1, ordering: .releasing) }
        let response = await respond(&decided.exchange, request: request, call: call, stub: decided.stub)
        return finishHandled(
            &decided.exchange, bodyRejectionStatus: request.bodyRejectionStatus,
            cancelled: _Concurrency.Task<Never, Never>.isCancelled, response: response)
    }

    /// A request that did not go through ``decide(_:)``.
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        running.add(1, ordering: .relaxed)
        defer { running.subtract(1, ordering: .releasing) }
        var exchange = Exchange(
            request: request, snapshot: state.current, generator: requestIDs, started: ContinuousClock.now)
        let response: HTTPServerResponse
        switch prepare(&exchange, request: request) {
        case .answer(let answer):
            response = answer
        case .call(let call):
            response = await respond(&exchange, request: request, call: call)
        }
        return finishHandled(
            &exchange, bodyRejectionStatus: request.bodyRejectionStatus,
            cancelled: _Concurrency.Task<Never, Never>.isCancelled, response: response)
    }

    /// Completes a request `handle` or a loop call answered (synchronous, so the async function holds fewer locals:
    /// each costs a task allocation); `cancelled` when the server gave up on the request, with `bodyRejectionStatus`
    /// when that was for its body.
    func finishHandled(
        _ exchange: inout Exchange, bodyRejectionStatus: Int?, cancelled: Bool,
        response: consuming HTTPServerResponse
    ) -> HTTPServerResponse {
        if cancelled {
            if let status = bodyRejectionStatus {
                // The server gave up on the body (too slow, over the limit, malformed framing) and sends this
                // answer with its own status: the error body and log line say so, like a refusal before routing.
                exchange.record.upstreamError =
                    status == 408 ? "client body timeout" : "rejected: \(HTTPServerErrorCode.code(for: status))"
                exchange.relayLog = nil
                return finish(
                    &exchange,
                    response: errorResponse(
                        status == 413 ? .payloadTooLarge : .badRequest,
                        requestID: exchange.requestID),
                    started: exchange.started, loggedStatus: status)
            }
            // The server cancels a handler whose connection closed or outlived the drain timeout: the answer reaches
            // nobody. Logged and counted as 499 (nginx's "client closed request"), not as the 502 built for it.
            exchange.record.upstreamError = exchange.record.upstreamError ?? "cancelled"
            return finish(
                &exchange, response: consume response, started: exchange.started, loggedStatus: Self.abandonedStatus)
        }
        return finish(&exchange, response: consume response, started: exchange.started)
    }

    /// The status logged for a request whose answer could not be delivered (see `handle`).
    static let abandonedStatus = 499

    /// The drain begins: every open WebSocket tunnel, and every one that opens from now on, gets the Close handshake
    /// (status 1001 to both ends at their next frame boundary), so that its client reconnects elsewhere at once.
    /// Returns how many were open.
    func goAwayTunnels() -> Int {
        openTunnels.goAway()
    }

    /// Waits (polling, bounded by `timeout`) until no request is in `handle` and no relayed response is still to be
    /// logged: after the server cancelled the ones that outlived the drain (and closed the connections of relayed
    /// bodies and tunnels), they still record their access-log line and metrics before the process exits.
    func waitUntilIdle(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        while (running.load(ordering: .acquiring) > 0 || relaying.value > 0) && ContinuousClock.now < deadline {
            try? await _Concurrency.Task.sleep(for: .milliseconds(5))
        }
    }

    /// What routing and the caller's authorisation decided: an answer of the gateway's own, or an upstream call.
    private enum Decision {
        case answer(HTTPServerResponse)
        case call(Call)
    }

    /// Admission (see ``Admission``), then what it decided in the access-log record: the route, the client, a rate
    /// limit's refusal.
    private func prepare(_ exchange: inout Exchange, request: borrowing HTTPServerRequest) -> Decision {
        let snapshot = exchange.snapshot
        switch Admission.decide(request, clientAddress: exchange.record.clientAddress, snapshot: snapshot) {
        case .unrouted(let refusal):
            return .answer(errorResponse(refusal, requestID: exchange.requestID))
        case .refused(let refusal, let routed):
            exchange.note(routed)
            if refusal.code == .tooManyRequests {
                exchange.record.upstreamError = "rate limited"
                snapshot.telemetry.rateLimited(route: routed.route.name, metrics: routed.runtime?.metrics)
            }
            return .answer(errorResponse(refusal, requestID: exchange.requestID))
        case .admitted(let routed, let upstream):
            exchange.note(routed)
            exchange.record.stubbed = upstream.isStub
            return .call(
                Call(
                    route: routed.route, upstream: upstream, upstreamPath: routed.upstreamPath,
                    clientName: routed.clientName, apiKeyHeader: snapshot.config.clients?.apiKeys?.header))
        }
    }

    /// The answer to an upstream call.
    private func respond(
        _ exchange: inout Exchange, request: HTTPServerRequest,
        call: Call, stub decidedStub: StubAnswer? = nil
    ) async -> HTTPServerResponse {
        let requestID = exchange.requestID
        let upstream = call.upstream
        // A WebSocket handshake on a route that relays them (such a route never coalesces).
        let tunnel = WebSocketTunnel.opening(request, route: call.route, upstream: upstream, registry: openTunnels)
        let key = call.coalescingKey(for: request)
        // Read once: each test of the optional key copies it (a struct of strings) through its value witness, and
        // `!= nil` (Optional's `Equatable` operator) copies it twice more.
        var sharing: Sharing?
        if let key { sharing = Sharing(key: key, call: call) }
        let shared = sharing != nil
        if let sharing { exchange.record.upstreamPath = sharing.sentPath }
        let maxBodyBytes = Int(clamping: Admission.bodyLimit(call.route, exchange.snapshot))
        // A long or open-ended body goes upstream as it arrives when the call is sent alone on the transport lane
        // (a shared call's body is part of its identity; a stub reads none).
        let streamedBody =
            shared || upstream.client == nil || !upstream.provider.hasTransportLane
            ? nil : UpstreamRequestBody.relaying(request, limit: maxBodyBytes)
        var body: [UInt8] = []
        if streamedBody == nil && request.hasBody {
            do {
                body = try await request.body.collect(upTo: maxBodyBytes)
            } catch ByteStreamError.tooLarge {
                exchange.record.bytesIn = request.body.receivedByteCount
                return errorResponse(.payloadTooLarge, requestID: requestID)
            } catch {
                // Cut short (the client closed or stalled): the log says how much of the body arrived.
                exchange.record.bytesIn = request.body.receivedByteCount
                return errorResponse(.badRequest, requestID: requestID)
            }
            exchange.record.bytesIn = body.count
        }
        let stub =
            decidedStub.map { StubCall(answer: $0, draw: nil) }
            ?? (upstream.responder == nil
                ? nil : stubCall(call, exchange: exchange, request: request, body: body, shared: shared))
        if stub != nil { exchange.record.stubbed = true }
        let target = call.sentTarget(
            for: exchange.caller, request: request, body: body, streamedBody: streamedBody, tunnel: tunnel,
            sharing: sharing, stubAnswer: stub?.answer, stubDraw: stub?.draw)

        var isTrial = false
        switch admit(call, exchange: &exchange) {
        case .refused(let answer): return answer
        case .admitted(let trial): isTrial = trial
        }
        var result: Result<Moya.Response, MoyaError>
        var answered: StubAnswer?
        if stub != nil, !shared, let retries = call.route.config.retries, retries.attempts > 1 {
            // A stub's failures as an upstream's are retried as the route says (Moya's stubs have no retriers).
            (result, answered) = await retriedStubResult(
                target, call: call, exchange: exchange, request: request,
                body: body)
        } else if shared {
            result = await upstream.provider.request(MultiTarget(target))
            exchange.record.coalesced = target.wasSent ? "leader" : "follower"
        } else {
            // Not shareable: sent in this task, on this event loop, without Moya's callback queue; a long body is
            // relayed to the client as it arrives instead of being collected.
            let provider = tunnel != nil ? upstream.tunnelProvider ?? upstream.provider : upstream.provider
            result = await provider.requestInCurrentTask(MultiTarget(target), streamingBodiesAbove: collectLimit)
        }
        if let recorder, tunnel == nil, upstream.client != nil, !shared || target.wasSent {
            record(result, into: recorder, call: call, request: request, exchange: exchange)
        }
        exchange.record.retries = target.retryCount
        // A coalesced follower's answer is its leader's call: counted once.
        if !shared || target.wasSent || isTrial {
            report(
                result, to: call, isTrial: isTrial, snapshot: exchange.snapshot,
                cancelled: _Concurrency.Task<Never, Never>.isCancelled || streamedBody?.exceededLimit == true)
        }
        if let streamedBody {
            exchange.record.bytesIn = streamedBody.bytesRelayed
            if streamedBody.exceededLimit {
                // Whatever the upstream made of the cut body (an error, or its own 400 if it answered first), the
                // client's body was too large.
                if case .success(let response) = result { response.streamedBody?.cancel() }
                return errorResponse(.payloadTooLarge, requestID: requestID)
            }
        }
        if let answer = answered ?? target.stub {
            return stubResponse(for: result, answer: answer, call: call, request: request, exchange: &exchange)
        }
        return response(
            for: result, call: call, isHead: MethodTest.isHead(request.head.method), tunnel: tunnel,
            exchange: &exchange)
    }

    /// The client's response for an upstream call's result. An upstream's answer keeps the `Content-Length` that
    /// framed it when its body is relayed as it arrives (not chunked anew) and when it answers a HEAD request, whose
    /// empty body says nothing of the length a GET would get. A WebSocket handshake's 101 (with `tunnel`) keeps the
    /// upstream's `Upgrade`, and its body is the upstream's side of the tunnel.
    func response(
        for result: Result<Moya.Response, MoyaError>, call: Call, isHead: Bool,
        tunnel: WebSocketTunnel? = nil, stub: StubAnswer? = nil,
        exchange: inout Exchange
    ) -> HTTPServerResponse {
        let timings = (try? result.get())?.timings ?? result.failureResponse?.timings
        exchange.record.upstreamConnect = timings?.connect
        exchange.record.upstreamFirstByte = timings?.firstByte
        let requestID = exchange.requestID
        switch result {
        case .success(let response)
        where response.statusCode == 101 && tunnel?.isAccepted(by: response.transportHeaders ?? [:]) == false:
            // Not the answer to this handshake: no tunnel to a peer that did not understand it.
            response.streamedBody?.cancel()
            exchange.record.upstreamError = "upstream's Sec-WebSocket-Accept does not match the key sent"
            exchange.snapshot.telemetry.upstreamError(
                upstream: call.route.upstream.name, code: .badGateway,
                metrics: exchange.record.routeMetrics)
            return errorResponse(.badGateway, requestID: requestID)
        case .success(let response) where response.statusCode == 401 && call.upstream.injectsCredentials:
            return refusedCredentials(call: call, exchange: &exchange)
        case .success(let response):
            if let transport = response.transportHeaders {
                return relayed(
                    status: response.statusCode, headers: transport, version: response.transportVersion ?? .http1_1,
                    streamed: response.streamedBody, body: response.transportBody ?? Array(response.data), call: call,
                    isHead: isHead, tunnel: tunnel, exchange: &exchange)
            }
            let body = stub?.body ?? call.upstream.stubBody(matching: response) ?? Array(response.data)
            if let stubHeaders = stub?.headers ?? call.upstream.stubResponseHeaders {
                // A stub's fields are shared by its answers: the request id goes beside them, not into a copy.
                noteIfUnshareable(stubHeaders, call: call, exchange: exchange)
                return HTTPServerResponse(
                    head: HTTPResponseHead(status: response.statusCode, headers: stubHeaders), body: .bytes(body),
                    requestID: requestID)
            }
            let headers = ProxyHeaders.downstream(
                from: response.response?.allHeaderFields ?? [:], requestID: requestID)
            noteIfUnshareable(headers, call: call, exchange: exchange)
            return HTTPServerResponse(
                head: HTTPResponseHead(status: response.statusCode, headers: headers), body: .bytes(body))
        case .failure(let error):
            let code = GatewayErrorMapping.code(for: error)
            exchange.record.upstreamError = GatewayErrorMapping.reason(for: error)
            exchange.snapshot.telemetry.upstreamError(
                upstream: call.route.upstream.name, code: code,
                metrics: exchange.record.routeMetrics)
            return errorResponse(code, requestID: requestID)
        }
    }

    /// The client's response for an upstream's answer as the HTTP client gave it (the callback lane's, see
    /// `LoopCall`): as ``response(for:call:isHead:tunnel:stub:exchange:)`` makes it from a `Moya.Response`.
    func response(
        forExchanged exchanged: consuming HTTPClientResponseOrStream, call: Call, isHead: Bool,
        exchange: inout Exchange
    ) -> HTTPServerResponse {
        switch consume exchanged {
        case .collected(var response):
            // The head's fields are moved out, and each hand-off below consumes them: the response is their one
            // holder, so they become the client's head in place (a binding left alive would hold them too).
            let headers = response.head.takeHeaders()
            return relayed(
                response.head, headers: consume headers, timings: response.timings, streamed: nil, body: response.body,
                call: call, isHead: isHead, exchange: &exchange)
        case .streamed(let response):
            // A class whose head stays readable: its fields are copied on their first change.
            return relayed(
                response.head, headers: response.head.headers, timings: response.timings, streamed: response,
                body: [], call: call, isHead: isHead, exchange: &exchange)
        }
    }

    /// ``relayed(status:headers:version:streamed:body:call:isHead:tunnel:exchange:)`` for the client's response head
    /// (whose fields are `headers`), after its timings are noted and a refusal of the gateway's credentials is
    /// answered.
    private func relayed(
        _ head: borrowing HTTPResponseHead, headers: consuming HTTPFields, timings: HTTPClientTimings,
        streamed: HTTPClientStreamingResponse?, body: @autoclosure () -> [UInt8], call: Call, isHead: Bool,
        exchange: inout Exchange
    ) -> HTTPServerResponse {
        exchange.record.upstreamConnect = timings.connect
        exchange.record.upstreamFirstByte = timings.firstByte
        if head.status == 401 && call.upstream.injectsCredentials {
            return refusedCredentials(call: call, exchange: &exchange)
        }
        return relayed(
            status: head.status, headers: consume headers, version: head.version, streamed: streamed, body: body(),
            call: call, isHead: isHead, tunnel: nil, exchange: &exchange)
    }

    /// The upstream refused the gateway's own credentials (the client's are never sent there): a fault of the
    /// gateway's configuration, and a challenge the client could not answer. With a token source, even a token
    /// fetched for the retry was refused.
    private func refusedCredentials(call: Call, exchange: inout Exchange) -> HTTPServerResponse {
        let code: GatewayErrorCode = call.upstream.tokenSource != nil ? .upstreamAuthFailed : .badGateway
        exchange.record.upstreamError = "upstream refused the gateway's credentials (401)"
        exchange.snapshot.telemetry.upstreamError(
            upstream: call.route.upstream.name, code: code,
            metrics: exchange.record.routeMetrics)
        return errorResponse(code, requestID: exchange.requestID)
    }

    /// The client's response for an upstream's answer that came over the network: its head (hop-by-hop fields out,
    /// `Via` and `X-Request-Id` in), and its body as bytes, or relayed (buffered, or at the client's pace) when it is
    /// still arriving (`streamed`).
    private func relayed(
        status: Int, headers transport: consuming HTTPFields, version: HTTPVersion,
        streamed: HTTPClientStreamingResponse?, body: @autoclosure () -> [UInt8], call: Call, isHead: Bool,
        tunnel: WebSocketTunnel?, exchange: inout Exchange
    ) -> HTTPServerResponse {
        // What the client's head needs from the upstream's fields, read before they are edited into it.
        let framingLength = isHead || streamed != nil ? ProxyHeaders.framingLength(of: transport) : nil
        let upgrade = tunnel != nil && status == 101 ? transport.first(name: "Upgrade") ?? "websocket" : nil
        let buffered =
            streamed != nil && buffering != nil && status != 101
            && ResponseBuffering.applies(route: call.route.config.buffering, upstreamHeaders: transport)
        var headers = ProxyHeaders.downstream(
            from: consume transport, received: version, requestID: exchange.requestID)
        if let framingLength { headers.add(name: "Content-Length", value: framingLength) }
        if let upgrade { headers.add(name: "Upgrade", value: upgrade) }
        noteIfUnshareable(headers, call: call, exchange: exchange)
        let head = HTTPResponseHead(status: status, headers: headers)
        if isHead {
            return HTTPServerResponse(head: head, body: .none)
        }
        guard let streamed else { return HTTPServerResponse(head: head, body: .bytes(body())) }
        let log = RelayedResponseLog(
            telemetry: exchange.snapshot.telemetry, started: exchange.started,
            tunnel: status == 101 ? tunnel : nil, pending: relaying)
        exchange.relayLog = log
        let loop = call.upstream.client?.currentLoop
        if let buffering, buffered {
            // Read as fast as the upstream sends, into memory and a temporary file: the upstream connection is free
            // again once the body is in, whatever the client's pace.
            let relayed = BufferedBodyRelay.relay(streamed, buffering: buffering, on: loop, log: log)
            return HTTPServerResponse(head: head, body: .stream(relayed))
        }
        let relayed = StreamedBodyRelay.relay(streamed, on: loop, log: log, tunnel: status == 101 ? tunnel : nil)
        return HTTPServerResponse(head: head, body: .stream(relayed))
    }

    /// A coalesced follower's response marked unshareable is shared all the same (the flight belongs to its group,
    /// see docs/configuration.md), but on the record.
    private func noteIfUnshareable(_ headers: HTTPFields, call: Call, exchange: Exchange) {
        // `!= "no"` first: equal small strings compare by their bits, while unequal ones take the standard library's
        // slower comparison, so the usual uncoalesced call pays one quick test.
        guard exchange.record.coalesced != "no", exchange.record.coalesced == "follower",
            let reason = SharedResponsePolicy.unshareableReason(headers)
        else { return }
        exchange.snapshot.logger.warning(
            "coalesced follower got a response marked unshareable",
            metadata: [
                "request_id": "\(exchange.requestID)", "route": "\(call.route.name)", "reason": "\(reason)"
            ])
    }

    /// Completes the access-log record and the metrics for `response`.
    private func finish(
        _ exchange: inout Exchange, response: consuming HTTPServerResponse,
        started: ContinuousClock.Instant, loggedStatus: Int? = nil
    ) -> HTTPServerResponse {
        exchange.record.status = loggedStatus ?? response.head.status
        if case .bytes(let body) = response.body { exchange.record.bytesOut = body.count }
        exchange.record.duration = ContinuousClock.now - started
        if let relayLog = exchange.relayLog {
            relayLog.arm(exchange.record)
        } else {
            exchange.snapshot.telemetry.record(exchange.record)
        }
        return response
    }

    /// The answer to a request admission refused.
    private func errorResponse(_ refusal: Admission.Refusal, requestID: String) -> HTTPServerResponse {
        var response = errorResponse(refusal.code, requestID: requestID, extra: refusal.headers)
        response.closesConnection = refusal.closesConnection
        return response
    }

    func errorResponse(_ code: GatewayErrorCode, requestID: String, extra: [String: String] = [:])
        -> HTTPServerResponse
    {
        var headers: HTTPFields = ["Content-Type": ErrorBody.contentType, "X-Request-Id": requestID]
        for (name, value) in extra { headers.add(name: name, value: value) }
        return HTTPServerResponse(
            status: code.status, headers: headers, body: ErrorBody.bytes(code, requestID: requestID))
    }
}
