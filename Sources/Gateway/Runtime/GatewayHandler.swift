import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Moya
import NetCore
import Synchronization

/// The gateway's request handler: route, authorise the caller, send the call through the upstream's Moya provider
/// (stubs, plugins, coalescing) and map the result to a response, with one access-log line per request.
final class GatewayHandler: HTTPServerHandler {
    private let state: GatewayStateBox
    private let requestIDs = RequestIDGenerator()
    /// Requests in `handle` now: the drain waits for the ones the server cancelled to write their access-log line.
    private let running = Atomic<Int>(0)
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
    private let collectLimit: Int

    init(state: GatewayStateBox, buffering: ResponseBuffering? = nil, recorder: ExchangeRecorder? = nil) {
        self.state = state
        self.buffering = buffering
        self.recorder = recorder
        collectLimit = recorder.map { max(StreamedBodyRelay.collectLimit, $0.limits.maxBodyBytes) } ?? StreamedBodyRelay.collectLimit
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
           request.declaredBodyLength ?? 0 == 0, request.bodyIsFinished {
            // A stub with a responder: its answer is drawn here, once; an immediate one is given at once. A spy's
            // request that no recorded response matches goes on to the upstream.
            let answer = stubAnswer(responder, exchange: exchange, request: request, call: call, body: [])
            if answer.unmatched && call.upstream.client != nil {
                return .handle(context: DecidedCall(exchange: exchange, call: call))
            }
            exchange.record.stubbed = true
            if answer.delay <= 0 {
                let target = call.target(for: exchange, request: request, body: [],
                                         forwardsHeaders: call.upstream.logsExchanges, stubAnswer: answer)
                if let result = call.upstream.provider.requestImmediately(MultiTarget(target)) {
                    let response = stubResponse(for: result, answer: answer, call: call, request: request, exchange: &exchange)
                    return .respond(finish(&exchange, response: response, started: started))
                }
            }
            return .handle(context: DecidedCall(exchange: exchange, call: call, stub: answer))
        }
        if !call.route.config.coalesce, call.upstream.answersInstantly, call.upstream.breaker == nil,
           request.declaredBodyLength ?? 0 == 0, request.bodyIsFinished {
            let target = call.target(for: exchange, request: request, body: [],
                                     forwardsHeaders: call.upstream.logsExchanges)
            // An instant stub answers `.immediate`: the provider only declines an endpoint it cannot map, which
            // the task then reports.
            if let result = call.upstream.provider.requestImmediately(MultiTarget(target)) {
                let answer = response(for: result, call: call, isHead: request.head.method == .head, exchange: &exchange)
                return .respond(finish(&exchange, response: answer, started: started))
            }
        }
        return .handle(context: DecidedCall(exchange: exchange, call: call))
    }

    /// An upstream call as ``decide(_:)`` left it for the task.
    private final class DecidedCall: @unchecked Sendable {
        // Made on the loop and read once by the task it is handed to (which starts after it is made).
        let exchange: Exchange
        let call: Call
        /// A stub responder's answer, drawn in `decide` (a sequence steps once per request).
        let stub: StubAnswer?

        init(exchange: Exchange, call: Call, stub: StubAnswer? = nil) {
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
        let requestID = RequestID.take(from: head?.headers.first(name: "X-Request-Id"), generator: requestIDs)
        var record = AccessRecord(requestID: requestID, method: head?.method.rawValue ?? "-", path: head?.target ?? "-",
                                  bytesIn: 0)
        record.status = rejection.status
        record.upstreamError = "rejected: \(HTTPServerErrorCode.code(for: rejection.status))"
        record.clientAddress = ClientAddress.of(peer: rejection.remoteAddress?.host, headers: head?.headers,
                                                trusted: state.current.config.server.trustedProxies)
        record.traceID = head.flatMap { TraceContext.traceID(in: $0.headers) }
        state.current.telemetry.record(record)
        // The server keeps its own status (431, 414, ...); the body names the nearest of the gateway's codes.
        return errorResponse(rejection.status == 413 ? .payloadTooLarge : .badRequest, requestID: requestID)
    }

    func handle(_ request: HTTPServerRequest, context: (any AnyObject & Sendable)?) async -> HTTPServerResponse {
        guard let decided = context as? DecidedCall else { return await handle(request) }
        running.add(1, ordering: .relaxed)
        defer { running.subtract(1, ordering: .releasing) }
        var exchange = decided.exchange
        let response = await respond(&exchange, request: request, call: decided.call, stub: decided.stub)
        return finishHandled(&exchange, request: request, response: response)
    }

    /// A request that did not go through ``decide(_:)``.
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        running.add(1, ordering: .relaxed)
        defer { running.subtract(1, ordering: .releasing) }
        var exchange = Exchange(request: request, snapshot: state.current, generator: requestIDs, started: ContinuousClock.now)
        let response: HTTPServerResponse
        switch prepare(&exchange, request: request) {
        case .answer(let answer):
            response = answer
        case .call(let call):
            response = await respond(&exchange, request: request, call: call)
        }
        return finishHandled(&exchange, request: request, response: response)
    }

    /// Completes a request `handle` answered (synchronous, so the async function holds fewer locals: each costs a
    /// task allocation).
    private func finishHandled(_ exchange: inout Exchange, request: borrowing HTTPServerRequest,
                               response: consuming HTTPServerResponse) -> HTTPServerResponse {
        if _Concurrency.Task<Never, Never>.isCancelled {
            if let status = request.bodyRejectionStatus {
                // The server gave up on the body (too slow, over the limit, malformed framing) and sends this
                // answer with its own status: the error body and log line say so, like a refusal before routing.
                exchange.record.upstreamError = status == 408 ? "client body timeout" : "rejected: \(HTTPServerErrorCode.code(for: status))"
                exchange.relayLog = nil
                return finish(&exchange, response: errorResponse(status == 413 ? .payloadTooLarge : .badRequest,
                                                                 requestID: exchange.requestID),
                              started: exchange.started, loggedStatus: status)
            }
            // The server cancels a handler whose connection closed or outlived the drain timeout: the answer reaches
            // nobody. Logged and counted as 499 (nginx's "client closed request"), not as the 502 built for it.
            exchange.record.upstreamError = exchange.record.upstreamError ?? "cancelled"
            return finish(&exchange, response: response, started: exchange.started, loggedStatus: Self.abandonedStatus)
        }
        return finish(&exchange, response: response, started: exchange.started)
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

    /// One request as it goes through the handler: its snapshot, id and access-log record. The request itself is
    /// passed beside it, borrowed: a copy costs a reference count per field.
    private struct Exchange {
        let snapshot: GatewaySnapshot
        let requestID: String
        var record: AccessRecord
        /// When the request reached the handler.
        let started: ContinuousClock.Instant
        /// Set when the response body is relayed: the access-log line waits for the body's end.
        var relayLog: RelayedResponseLog?

        init(request: borrowing HTTPServerRequest, snapshot: GatewaySnapshot, generator: RequestIDGenerator,
             started: ContinuousClock.Instant) {
            self.snapshot = snapshot
            self.started = started
            let head = request.head
            requestID = RequestID.take(from: head.headers.first(name: "X-Request-Id"), generator: generator)
            record = AccessRecord(requestID: requestID, method: head.method.rawValue, path: head.target,
                                  bytesIn: Int(request.declaredBodyLength ?? 0))
            record.clientAddress = ClientAddress.of(peer: request.remoteAddress?.host, headers: head.headers,
                                                    trusted: snapshot.config.server.trustedProxies)
            record.traceID = TraceContext.traceID(in: head.headers)
        }

        /// Notes the route (and the API-key client, once known) in the access-log record.
        mutating func note(_ routed: Admission.Routed) {
            record.route = routed.route.name
            record.upstream = routed.route.upstream.name
            record.upstreamPath = routed.upstreamPath
            record.routeMetrics = routed.runtime?.metrics
            if let client = routed.clientName { record.client = client }
        }
    }

    /// What routing and the caller's authorisation decided: an answer of the gateway's own, or an upstream call.
    private enum Decision {
        case answer(HTTPServerResponse)
        case call(Call)
    }

    /// An upstream call, all but its body decided. The request, its id and the client's address are passed in (not
    /// copied here: a copy of the request costs a reference count per field).
    private struct Call {
        let route: CompiledRoute
        let upstream: UpstreamProvider
        let upstreamPath: String
        let clientName: String?
        let apiKeyHeader: String?

        /// The coalescing key, when this call may share an upstream call.
        func coalescingKey(for request: borrowing HTTPServerRequest) -> CoalescingKey? {
            let method = request.head.method
            guard route.config.coalesce && CoalescingKey.isCoalescible(method) else { return nil }
            return CoalescingKey.make(method: method, upstream: route.upstream.name,
                                      upstreamURL: upstream.origin + upstreamPath, varyHeaders: route.config.coalesceVary,
                                      requestHeaders: request.head.headers, clientName: clientName)
        }

        /// The path and query sent upstream: a shared call's query has its parameters sorted, as in its key, so that
        /// requests that differ only in parameter order share it and send the same request however they arrived.
        func sentPath(key: CoalescingKey?) -> String {
            // The key's URL is `origin + upstreamPath` with the query sorted: its path part, without sorting again.
            guard let key, key.url.utf8.count > upstream.origin.utf8.count else { return upstreamPath }
            return String(decoding: key.url.utf8.dropFirst(upstream.origin.utf8.count), as: UTF8.self)
        }

        /// The Moya target for this call. Without `forwardsHeaders` it carries no client or forwarding headers (for
        /// a stub that answers at once and logs no exchange: nobody would see them).
        func target(for exchange: Exchange, request: borrowing HTTPServerRequest, body: [UInt8],
                    streamedBody: UpstreamRequestBody? = nil, tunnel: WebSocketTunnel? = nil, key: CoalescingKey? = nil,
                    forwardsHeaders: Bool = true, stubAnswer: StubAnswer? = nil, stubDraw: StubDraw? = nil) -> GatewayTarget {
            var (stable, perRequest) = forwardsHeaders
                ? upstreamHeaders(for: exchange, request: request, key: key) : ([:], HTTPFields())
            if let tunnel { perRequest.replaceOrAdd(tunnel.upstreamFields) }
            return GatewayTarget(
                provider: upstream, origin: upstream.origin, upstreamTarget: sentPath(key: key),
                method: request.head.method,
                body: body.isEmpty ? Data() : Data(body), streamedBody: streamedBody, tunnel: tunnel, stableHeaders: stable,
                perRequestHeaders: perRequest, flightKey: key.map { "\($0.hashValue)-\($0.identity)" },
                timeout: route.config.timeout, retries: route.config.retries,
                callerKey: forwardsHeaders ? callerKey(for: exchange) : nil, stubAnswer: stubAnswer, stubDraw: stubDraw)
        }

        /// The caller as `rate_limit` keys it (the API client, else the client's address behind `trusted_proxies`, an
        /// IPv6 one by its /64), hashed: for the fair share of a full upstream pool.
        func callerKey(for exchange: Exchange) -> Int {
            var hasher = Hasher()
            if let clientName {
                hasher.combine(1 as UInt8)
                hasher.combine(clientName)
            } else {
                hasher.combine(2 as UInt8)
                hasher.combine(exchange.record.clientAddress.map(ClientAddress.rateLimitKey) ?? "")
            }
            return hasher.finalize()
        }

        /// The headers sent upstream: those that take part in a flight's identity, and this caller's own (all of
        /// them when the call is not shared).
        private func upstreamHeaders(for exchange: Exchange, request: borrowing HTTPServerRequest, key: CoalescingKey?)
            -> (stable: [String: String], perRequest: HTTPFields) {
            let head = request.head
            let forwarding = ProxyHeaders.forwarding(client: head.headers, peer: request.remoteAddress?.host,
                                                     clientAddress: exchange.record.clientAddress, isTLS: request.isTLS,
                                                     requestID: exchange.requestID, version: head.version)
            return ProxyHeaders.upstreamHeaders(from: head.headers, apiKeyHeader: apiKeyHeader, configured: upstream.upstream.headers,
                                                dropAuthorization: upstream.injectsCredentials,
                                                varyHeaders: route.config.coalesceVary, coalescing: key != nil,
                                                forwarding: forwarding)
        }
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
            return .call(Call(route: routed.route, upstream: upstream, upstreamPath: routed.upstreamPath,
                              clientName: routed.clientName, apiKeyHeader: snapshot.config.clients?.apiKeys?.header))
        }
    }

    /// The answer to an upstream call.
    private func respond(_ exchange: inout Exchange, request: HTTPServerRequest,
                         call: Call, stub decidedStub: StubAnswer? = nil) async -> HTTPServerResponse {
        let requestID = exchange.requestID
        let upstream = call.upstream
        // A WebSocket handshake on a route that relays them (such a route never coalesces).
        let tunnel = WebSocketTunnel.opening(request, route: call.route.config, upstream: upstream, registry: openTunnels)
        let key = call.coalescingKey(for: request)
        if key != nil { exchange.record.upstreamPath = call.sentPath(key: key) }
        let maxBodyBytes = Int(clamping: Admission.bodyLimit(call.route.config, exchange.snapshot.config))
        // A long or open-ended body goes upstream as it arrives when the call is sent alone on the transport lane
        // (a shared call's body is part of its identity; a stub reads none).
        let streamedBody = key != nil || upstream.client == nil || upstream.provider.transportLane == nil
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
        let stub = decidedStub.map { StubCall(answer: $0, draw: nil) }
            ?? stubCall(call, exchange: exchange, request: request, body: body, shared: key != nil)
        if stub != nil { exchange.record.stubbed = true }
        let target = call.target(for: exchange, request: request, body: body, streamedBody: streamedBody, tunnel: tunnel,
                                 key: key, stubAnswer: stub?.answer, stubDraw: stub?.draw)

        var isTrial = false
        if let breaker = upstream.breaker {
            switch breaker.admit(now: EventLoop.now()) {
            case .allowed(let trial):
                isTrial = trial
            case .refused(let wait):
                exchange.record.upstreamError = "circuit open"
                exchange.snapshot.telemetry.circuitRefused(upstream: call.route.upstream.name,
                                                             metrics: exchange.record.routeMetrics)
                return errorResponse(.serviceUnavailable, requestID: requestID,
                                     extra: ["Retry-After": RetryAfter.value(wait)])
            }
        }
        var result: Result<Moya.Response, MoyaError>
        var answered: StubAnswer?
        if stub != nil, key == nil, let retries = call.route.config.retries, retries.attempts > 1 {
            // A stub's failures as an upstream's are retried as the route says (Moya's stubs have no retriers).
            (result, answered) = await retriedStubResult(target, call: call, exchange: exchange, request: request,
                                                         body: body)
        } else if key != nil {
            result = await upstream.provider.request(MultiTarget(target))
            exchange.record.coalesced = target.wasSent ? "leader" : "follower"
        } else {
            // Not shareable: sent in this task, on this event loop, without Moya's callback queue; a long body is
            // relayed to the client as it arrives instead of being collected.
            let provider = tunnel != nil ? upstream.tunnelProvider ?? upstream.provider : upstream.provider
            result = await provider.requestInCurrentTask(MultiTarget(target), streamingBodiesAbove: collectLimit)
        }
        if let recorder, tunnel == nil, upstream.client != nil, key == nil || target.wasSent {
            record(result, into: recorder, call: call, request: request, exchange: exchange)
        }
        exchange.record.retries = target.retryCount
        // A coalesced follower's answer is its leader's call: counted once.
        if let breaker = upstream.breaker, key == nil || target.wasSent || isTrial {
            let outcome = UpstreamCircuit.outcome(of: result, cancelled: _Concurrency.Task<Never, Never>.isCancelled
                                                  || streamedBody?.exceededLimit == true)
            UpstreamCircuit.report(breaker.record(outcome, trial: isTrial, now: EventLoop.now()),
                                   upstream: call.route.upstream.name, breaker: breaker, snapshot: exchange.snapshot)
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
        return response(for: result, call: call, isHead: request.head.method == .head, tunnel: tunnel,
                        exchange: &exchange)
    }

    /// The client's response for an upstream call's result. An upstream's answer keeps the `Content-Length` that
    /// framed it when its body is relayed as it arrives (not chunked anew) and when it answers a HEAD request, whose
    /// empty body says nothing of the length a GET would get. A WebSocket handshake's 101 (with `tunnel`) keeps the
    /// upstream's `Upgrade`, and its body is the upstream's side of the tunnel.
    private func response(for result: Result<Moya.Response, MoyaError>, call: Call, isHead: Bool,
                          tunnel: WebSocketTunnel? = nil, stub: StubAnswer? = nil,
                          exchange: inout Exchange) -> HTTPServerResponse {
        let timings = (try? result.get())?.timings ?? result.failureResponse?.timings
        exchange.record.upstreamConnect = timings?.connect
        exchange.record.upstreamFirstByte = timings?.firstByte
        let requestID = exchange.requestID
        switch result {
        case .success(let response) where response.statusCode == 101 && tunnel?.isAccepted(by: response.transportHeaders ?? [:]) == false:
            // Not the answer to this handshake: no tunnel to a peer that did not understand it.
            response.streamedBody?.cancel()
            exchange.record.upstreamError = "upstream's Sec-WebSocket-Accept does not match the key sent"
            exchange.snapshot.telemetry.upstreamError(upstream: call.route.upstream.name, code: .badGateway,
                                                      metrics: exchange.record.routeMetrics)
            return errorResponse(.badGateway, requestID: requestID)
        case .success(let response) where response.statusCode == 401 && call.upstream.injectsCredentials:
            // The upstream refused the gateway's own credentials (the client's are never sent there): a fault of the
            // gateway's configuration, and a challenge the client could not answer. With a token source, even a
            // token fetched for the retry was refused.
            let code: GatewayErrorCode = call.upstream.tokenSource != nil ? .upstreamAuthFailed : .badGateway
            exchange.record.upstreamError = "upstream refused the gateway's credentials (401)"
            exchange.snapshot.telemetry.upstreamError(upstream: call.route.upstream.name, code: code,
                                                      metrics: exchange.record.routeMetrics)
            return errorResponse(code, requestID: requestID)
        case .success(let response):
            var headers: HTTPFields
            if let transport = response.transportHeaders {
                headers = ProxyHeaders.downstream(from: transport, received: response.transportVersion ?? .http1_1,
                                                  requestID: requestID)
                if isHead || response.streamedBody != nil, let length = ProxyHeaders.framingLength(of: transport) {
                    headers.add(name: "Content-Length", value: length)
                }
                if tunnel != nil, response.statusCode == 101 {
                    headers.add(name: "Upgrade", value: transport.first(name: "Upgrade") ?? "websocket")
                }
            } else if var stubHeaders = stub?.headers ?? call.upstream.stubResponseHeaders {
                stubHeaders.add(name: "X-Request-Id", value: requestID)
                headers = stubHeaders
            } else {
                headers = ProxyHeaders.downstream(from: response.response?.allHeaderFields ?? [:], requestID: requestID)
            }
            if exchange.record.coalesced == "follower", let reason = SharedResponsePolicy.unshareableReason(headers) {
                // Shared all the same (the flight belongs to its group, see docs/configuration.md), but on the record.
                exchange.snapshot.logger.warning("coalesced follower got a response marked unshareable", metadata: [
                    "request_id": "\(requestID)", "route": "\(call.route.name)", "reason": "\(reason)"])
            }
            let head = HTTPResponseHead(status: response.statusCode, headers: headers)
            if isHead, response.transportHeaders != nil {
                return HTTPServerResponse(head: head, body: .none)
            }
            if let streamed = response.streamedBody {
                let log = RelayedResponseLog(telemetry: exchange.snapshot.telemetry, started: exchange.started,
                                             tunnel: response.statusCode == 101 ? tunnel : nil, pending: relaying)
                exchange.relayLog = log
                let loop = call.upstream.client?.currentLoop
                if let buffering, response.statusCode != 101,
                   ResponseBuffering.applies(route: call.route.config.buffering, upstreamHeaders: response.transportHeaders) {
                    // Read as fast as the upstream sends, into memory and a temporary file: the upstream connection
                    // is free again once the body is in, whatever the client's pace.
                    let relayed = BufferedBodyRelay.relay(streamed, buffering: buffering, on: loop, log: log)
                    return HTTPServerResponse(head: head, body: .stream(relayed))
                }
                let relayed = StreamedBodyRelay.relay(streamed, on: loop, log: log,
                                                      tunnel: response.statusCode == 101 ? tunnel : nil)
                return HTTPServerResponse(head: head, body: .stream(relayed))
            }
            let body = response.transportBody ?? stub?.body ?? call.upstream.stubBody(matching: response.data)
                ?? Array(response.data)
            return HTTPServerResponse(head: head, body: .bytes(body))
        case .failure(let error):
            let code = GatewayErrorMapping.code(for: error)
            exchange.record.upstreamError = GatewayErrorMapping.reason(for: error)
            exchange.snapshot.telemetry.upstreamError(upstream: call.route.upstream.name, code: code,
                                                      metrics: exchange.record.routeMetrics)
            return errorResponse(code, requestID: requestID)
        }
    }

    /// Completes the access-log record and the metrics for `response`.
    private func finish(_ exchange: inout Exchange, response: consuming HTTPServerResponse,
                        started: ContinuousClock.Instant, loggedStatus: Int? = nil) -> HTTPServerResponse {
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

    private func errorResponse(_ code: GatewayErrorCode, requestID: String, extra: [String: String] = [:]) -> HTTPServerResponse {
        var headers: HTTPFields = ["Content-Type": ErrorBody.contentType, "X-Request-Id": requestID]
        for (name, value) in extra { headers.add(name: name, value: value) }
        return HTTPServerResponse(status: code.status, headers: headers, body: ErrorBody.bytes(code, requestID: requestID))
    }
}

// MARK: - Stub responders

extension GatewayHandler {
    /// The stub's answer to this call, drawn now: the request as the upstream would see it (after the route's
    /// rewrite), with the client's headers and `body`.
    private func stubAnswer(_ responder: StubResponder, exchange: Exchange, request: borrowing HTTPServerRequest,
                            call: Call, body: [UInt8]) -> StubAnswer {
        let stubRequest = StubRequest(method: request.head.method, target: Self.stubTarget(call), headers: request.head.headers,
                                      body: body, requestID: exchange.requestID)
        return responder.answer(for: stubRequest, deadline: call.route.config.timeout.map { exchange.started + $0 })
    }

    /// The target a stub matches: the upstream's, without a spied upstream's base path (recorded without it).
    private static func stubTarget(_ call: Call) -> String {
        guard let base = call.upstream.upstream.baseURL?.basePath, !base.isEmpty, base != "/" else { return call.upstreamPath }
        let (path, query) = ExchangeRecorder.split(call.upstreamPath)
        let stripped = ExchangeRecorder.dropBase(base, from: path)
        return query.map { stripped + "?" + $0 } ?? stripped
    }

    /// A call a stub responder answers: its answer drawn now, or the draw a coalesced call's shared call makes.
    private struct StubCall {
        var answer: StubAnswer?
        var draw: StubDraw?
    }

    /// The call's stub answer when its upstream has a responder: drawn now, or, for a `shared` (coalesced) call, when
    /// the shared call asks for it, so that a flight draws once.
    private func stubCall(_ call: Call, exchange: Exchange, request: borrowing HTTPServerRequest, body: [UInt8],
                          shared: Bool) -> StubCall? {
        guard let responder = call.upstream.responder else { return nil }
        // A spy (an upstream with a network client) draws at once: a call no recorded response matches is proxied.
        guard shared, call.upstream.client == nil else {
            let answer = stubAnswer(responder, exchange: exchange, request: request, call: call, body: body)
            return answer.unmatched && call.upstream.client != nil ? nil : StubCall(answer: answer, draw: nil)
        }
        let stubRequest = StubRequest(method: request.head.method, target: Self.stubTarget(call), headers: request.head.headers,
                                      body: body, requestID: exchange.requestID)
        return StubCall(answer: nil, draw: StubDraw(pending: stubRequest, responder: responder,
                                                    deadline: call.route.config.timeout.map { exchange.started + $0 }))
    }

    /// The client's response for a stub responder's answer: as any stub's, with the answer's own head and body, and
    /// a fault acting on the client's connection acted out.
    private func stubResponse(for result: Result<Moya.Response, MoyaError>, answer: StubAnswer, call: Call,
                              request: borrowing HTTPServerRequest, exchange: inout Exchange) -> HTTPServerResponse {
        let answered = response(for: result, call: call, isHead: request.head.method == .head, stub: answer,
                                exchange: &exchange)
        if answer.unmatched { exchange.record.upstreamError = "no stub response matched" }
        guard let fault = answer.clientFault, case .success(let moya) = result,
              moya.statusCode == answer.status else { return answered }
        exchange.record.upstreamError = "stub fault: \(fault.kind.rawValue)"
        return StubFaultResponse.applying(fault, to: answered, isHead: request.head.method == .head, loop: request.loop)
    }

    /// A stub call with the route's `retries`: a failure an upstream's would be retried for (a reset or a close
    /// before any answer; a status in `retries.statuses`) draws a new answer, within the attempts, for idempotent
    /// methods, and not past the route's deadline. Returns the last result and its draw.
    private func retriedStubResult(_ first: GatewayTarget, call: Call, exchange: Exchange,
                                   request: HTTPServerRequest, body: [UInt8]) async
        -> (Result<Moya.Response, MoyaError>, StubAnswer?) {
        var target = first
        var attempt = 0
        while true {
            let result = await call.upstream.provider.requestInCurrentTask(MultiTarget(target))
            guard let retries = call.route.config.retries, attempt + 1 < retries.attempts,
                  request.head.method.isIdempotent, Self.stubResultIsRetried(result, statuses: retries.statuses),
                  let responder = call.upstream.responder else { return (result, target.stub) }
            let deadline = call.route.config.timeout.map { exchange.started + $0 }
            if let deadline, ContinuousClock.now + (retries.backoff ?? .zero) >= deadline { return (result, target.stub) }
            if let backoff = retries.backoff {
                do { try await _Concurrency.Task.sleep(for: backoff) } catch { return (result, target.stub) }
            }
            attempt += 1
            first.countRetry()
            let answer = stubAnswer(responder, exchange: exchange, request: request, call: call, body: body)
            target = call.target(for: exchange, request: request, body: body, forwardsHeaders: call.upstream.logsExchanges,
                                 stubAnswer: answer)
        }
    }

    /// Whether a stub's result is one a route retries: a status it lists, or a stub fault that, from an upstream,
    /// would come before any byte of an answer (a reset, a close).
    static func stubResultIsRetried(_ result: Result<Moya.Response, MoyaError>, statuses: [Int]) -> Bool {
        switch result {
        case .success(let response):
            return statuses.contains(response.statusCode)
        case .failure(let error):
            if let response = error.response { return statuses.contains(response.statusCode) }
            guard case .underlying(let underlying, _) = error else { return false }
            let nsError = underlying as NSError
            guard nsError.domain == NSURLErrorDomain, let fault = nsError.userInfo[StubFaultError.faultKey] as? String else {
                return false
            }
            return fault == StubFaultConfig.Kind.connectionReset.rawValue
                || fault == StubFaultConfig.Kind.emptyResponse.rawValue
        }
    }
}

// MARK: - Recording (`moya-gateway record`)

extension GatewayHandler {
    /// Hands a proxied exchange's answer to the recorder: a complete answer is recorded (see ``ExchangeRecorder``),
    /// anything else counted.
    private func record(_ result: Result<Moya.Response, MoyaError>, into recorder: ExchangeRecorder, call: Call,
                        request: borrowing HTTPServerRequest, exchange: Exchange) {
        guard let response = (try? result.get()) ?? result.failureResponse, let headers = response.transportHeaders else {
            return recorder.skip(.failed)
        }
        if let streamed = response.streamedBody {
            // Longer than the per-body cap: relayed to the client as it arrives, not recorded.
            _ = streamed
            return recorder.skip(.streamed)
        }
        let config = exchange.snapshot.config
        let upstream = call.upstream.upstream
        var secrets: [String] = []
        if let token = upstream.accessToken {
            secrets += [token.token.value, token.authorizationValue]
        }
        if let credentials = upstream.credentials {
            secrets += [credentials.password.value,
                        Data("\(credentials.user):\(credentials.password.value)".utf8).base64EncodedString()]
        }
        // Configured headers that carry a credential (by their name: a key, a token, a secret...).
        for field in upstream.headers where Self.namesCredential(field.name) { secrets.append(field.value) }
        let apiKeyHeader = config.clients?.apiKeys?.header
        let identity = ExchangeRecorder.identityNames(apiKeyHeader: apiKeyHeader, redacted: config.logging.redactHeaders)
        for field in request.head.headers where identity.contains(field.name) {
            secrets.append(field.value)
            secrets += Self.cookieValues(field.value)
        }
        for field in headers where field.name.equalsIgnoringASCIICase("Set-Cookie") || identity.contains(field.name) {
            secrets.append(field.value)
            secrets += Self.cookieValues(String(field.value.split(separator: ";").first ?? ""))
        }
        for key in config.clients?.apiKeys?.keys ?? [] { secrets.append(key.key.value) }
        recorder.observe(upstream: upstream.name, basePath: upstream.baseURL?.basePath ?? "",
                         method: request.head.method.rawValue, target: call.upstreamPath,
                         requestHeaders: request.head.headers, varyNames: call.route.config.coalesceVary,
                         identityNames: identity, status: response.statusCode, responseHeaders: headers,
                         body: response.transportBody ?? Array(response.data),
                         duration: Self.upstreamTime(response, since: exchange.started), secrets: secrets,
                         logger: exchange.snapshot.logger)
    }

    /// How long the upstream took to answer, in seconds, as a stub should take to: the client's time from sending to
    /// the end of the body, without opening a connection (a replay opens none); else the time since the request came.
    private static func upstreamTime(_ response: Moya.Response, since started: ContinuousClock.Instant) -> Double {
        guard let timings = response.timings, timings.total > .zero else { return (ContinuousClock.now - started).seconds }
        return max(timings.total - (timings.connect ?? .zero), .zero).seconds
    }

    /// Whether a header's name says it carries a credential (`X-Upstream-Key`, `X-Auth-Token`, `X-Client-Secret`).
    static func namesCredential(_ name: String) -> Bool {
        let lower = name.lowercased()
        return ["key", "token", "auth", "secret", "pass", "session", "cookie", "signature", "credential"]
            .contains { lower.contains($0) }
    }

    /// The values of a `Cookie` (or a `Set-Cookie`'s first pair): `a=1; b=2` gives `1` and `2`.
    private static func cookieValues(_ header: String) -> [String] {
        header.split(separator: ";").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? String(parts[1]).trimmingSpaces() : nil
        }
    }
}

/// Maps a Moya failure to the error the client sees.
enum GatewayErrorMapping {
    static func code(for error: MoyaError) -> GatewayErrorCode {
        switch error {
        case .underlying(let underlying, _):
            return code(forUnderlying: underlying)
        case .requestMapping, .parameterEncoding, .encodableMapping:
            return .badRequest
        default:
            return .badGateway
        }
    }

    /// A short, secret-free reason for the access log.
    static func reason(for error: MoyaError) -> String {
        if case .underlying(let underlying, _) = error {
            if let client = underlying as? HTTPClientError { return client.description }
            if let token = underlying as? AccessTokenSourceError { return "no access token: \(token.reason)" }
            if let moya = underlying as? MoyaError { return reason(for: moya) }
            let nsError = underlying as NSError
            if nsError.domain == NSURLErrorDomain, let fault = nsError.userInfo[StubFaultError.faultKey] as? String {
                return "stub fault: \(fault)"
            }
            if nsError.domain == NSURLErrorDomain { return urlErrorReason(code: nsError.code) }
            return String(describing: type(of: underlying))
        }
        if case .statusCode(let response) = error { return "status \(response.statusCode) failed validation" }
        return error.errorDescription ?? "\(error)"
    }

    /// What Moya's `NSURLErrorDomain` errors mean, in the access log's words (a cancelled call is the client's leaving
    /// or the drain, not an upstream fault).
    private static func urlErrorReason(code: Int) -> String {
        switch code {
        case NSURLErrorCancelled: return "cancelled"
        case NSURLErrorTimedOut: return "timed out"
        case NSURLErrorHTTPTooManyRedirects: return "too many redirects"
        default: return "URL error \(code)"
        }
    }

    static func code(forUnderlying error: any Error) -> GatewayErrorCode {
        if error is AccessTokenSourceError { return .upstreamAuthFailed }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .responseTimeout, .responseBodyTimeout: return .gatewayTimeout
            // No connection to the upstream could be had in time: the gateway's own capacity, the request never
            // left (so 503, safe to retry, rather than 504, which says the upstream was too slow to answer).
            case .poolExhausted, .poolWaitTimeout, .shutDown: return .serviceUnavailable
            default: return .badGateway
            }
        }
        if let moya = error as? MoyaError { return code(for: moya) }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut { return .gatewayTimeout }
        return .badGateway
    }
}

extension Result where Success == Moya.Response, Failure == MoyaError {
    /// The response a failure carries (a status that failed validation), if any.
    var failureResponse: Moya.Response? {
        if case .failure(let error) = self { return error.response }
        return nil
    }
}
