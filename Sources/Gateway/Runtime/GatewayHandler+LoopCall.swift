import HTTPServerCore
import HTTPWire
import Moya
import NetCore

extension GatewayHandler {
    /// Whether `call` goes upstream by callback on the loop, with no task (``start(_:context:responder:)``): a
    /// network upstream's call that is not shared, carries no body and opens no tunnel, sent on the transport lane
    /// while the gateway is not recording. Everything else runs in a task (`handle(_:context:)`).
    func answersOnLoop(_ call: Call, request: borrowing HTTPServerRequest) -> Bool {
        let upstream = call.upstream
        return upstream.client != nil && upstream.responder == nil && !upstream.isStub && recorder == nil
            && !request.hasBody && request.upgradeInput == nil
            && !(call.route.config.coalesce && CoalescingKey.isCoalescible(request.head.method))
            && upstream.provider.hasTransportLane
    }

    /// Sends a call ``decide(_:)`` answered `.answerLater` for: through the upstream's circuit and Moya's pipeline
    /// by callback (`MoyaProvider.request(onLoop:)`), then the same response, access-log line and metrics as
    /// `handle(_:context:)` gives, to `responder`.
    func start(
        _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder
    ) {
        guard let decided = context as? DecidedCall, let call = decided.call.take() else {
            // Not one `decide` made: answered in a task, as any other request.
            return answerInTask(request, context: context, responder: responder)
        }
        running.add(1, ordering: .relaxed)
        let isTrial: Bool
        switch admit(call, exchange: &decided.exchange) {
        case .refused(let answer):
            responder.respond(finishCall(decided, response: answer, cancelled: false))
            return
        case .admitted(let trial):
            isTrial = trial
        }
        let target = call.target(for: decided.exchange.caller, request: request, body: [])
        let provider = call.upstream.provider
        let loopCall = LoopCall(
            handler: self, decided: decided, call: consume call, target: target, isTrial: isTrial,
            isHead: MethodTest.isHead(request.head.method), responder: responder)
        responder.cancellation = loopCall
        loopCall.sent = provider.request(
            onLoop: MultiTarget(target), streamingBodiesAbove: collectLimit, completion: loopCall)
    }

    /// The access-log line and metrics of a loop call answered with `response`; `running` counts it no more.
    fileprivate func finishCall(
        _ decided: DecidedCall, response: consuming HTTPServerResponse, cancelled: Bool
    ) -> HTTPServerResponse {
        defer { running.subtract(1, ordering: .releasing) }
        return finishHandled(&decided.exchange, bodyRejectionStatus: nil, cancelled: cancelled, response: response)
    }

    /// What the upstream's circuit says about a call.
    enum CircuitAdmission {
        /// Sent; `trial` when it is the half-open circuit's trial call.
        case admitted(trial: Bool)
        /// The circuit is open: the 503 with `Retry-After`, nothing sent.
        case refused(HTTPServerResponse)
    }

    /// Asks the upstream's circuit (if it has one) whether `call` may be sent.
    func admit(_ call: Call, exchange: inout Exchange) -> CircuitAdmission {
        guard let breaker = call.upstream.breaker else { return .admitted(trial: false) }
        switch breaker.admit(now: EventLoop.now()) {
        case .allowed(let trial):
            return .admitted(trial: trial)
        case .refused(let wait):
            exchange.record.upstreamError = "circuit open"
            exchange.snapshot.telemetry.circuitRefused(
                upstream: call.route.upstream.name, metrics: exchange.record.routeMetrics)
            return .refused(
                errorResponse(
                    .serviceUnavailable, requestID: exchange.requestID,
                    extra: ["Retry-After": RetryAfter.value(wait)]))
        }
    }

    /// Records a sent call's outcome in its upstream's circuit (if it has one); `cancelled` when the call was given
    /// up on (not the upstream's fault).
    func report(
        _ result: Result<Moya.Response, MoyaError>, to call: Call, isTrial: Bool, snapshot: GatewaySnapshot,
        cancelled: Bool
    ) {
        guard let breaker = call.upstream.breaker else { return }
        let outcome = UpstreamCircuit.outcome(of: result, cancelled: cancelled)
        UpstreamCircuit.report(
            breaker.record(outcome, trial: isTrial, now: EventLoop.now()),
            upstream: call.route.upstream.name, breaker: breaker, snapshot: snapshot)
    }
}

/// One call sent by callback on the loop (see ``GatewayHandler/start(_:context:responder:)``), until its answer is
/// given. Loop thread only.
private final class LoopCall: HTTPServerCancellation, MoyaLoopCompletion {
    let handler: GatewayHandler
    let decided: GatewayHandler.DecidedCall
    let call: GatewayHandler.Call
    let target: GatewayTarget
    let isTrial: Bool
    let isHead: Bool
    let responder: any HTTPServerResponder
    /// The request under way, for cancelling it. Loop-confined, read and assigned whole: no dynamic exclusivity
    /// check.
    @exclusivity(unchecked) var sent: MoyaLoopRequest?

    init(
        handler: GatewayHandler, decided: GatewayHandler.DecidedCall, call: GatewayHandler.Call,
        target: GatewayTarget, isTrial: Bool, isHead: Bool, responder: any HTTPServerResponder
    ) {
        self.handler = handler
        self.decided = decided
        self.call = call
        self.target = target
        self.isTrial = isTrial
        self.isHead = isHead
        self.responder = responder
    }

    /// The server gave up on the request (its client went away, the drain timed out): the call is cancelled, and
    /// its result logged as the handler's would be (499).
    func cancel() {
        sent?.cancel()
    }

    /// The call's result: the response to the client, the access-log line and metrics, as `handle` makes them.
    func requestCompleted(_ result: consuming Result<Moya.Response, MoyaError>) {
        sent = nil
        let cancelled = responder.isCancelled
        decided.exchange.record.retries = target.retryCount
        if call.upstream.breaker != nil {
            handler.report(
                result, to: call, isTrial: isTrial, snapshot: decided.exchange.snapshot, cancelled: cancelled)
        }
        let response = handler.response(for: result, call: call, isHead: isHead, exchange: &decided.exchange)
        responder.respond(handler.finishCall(decided, response: response, cancelled: cancelled))
    }
}
