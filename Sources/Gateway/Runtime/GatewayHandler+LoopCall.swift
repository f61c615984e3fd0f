import HTTPClientCore
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

    /// Sends a call ``decide(_:)`` answered `.answerLater` for (its ``LoopCall``): through the upstream's circuit
    /// and Moya's pipeline by callback (`MoyaProvider.request(onLoop:)`), then the same response, access-log line and
    /// metrics as `handle(_:context:)` gives, to `responder`.
    func start(
        _ request: HTTPServerRequest, context: (any AnyObject & Sendable)?, responder: any HTTPServerResponder
    ) {
        guard let loopCall = context as? LoopCall, loopCall.responder == nil else {
            // Not one `decide` made: answered in a task, as any other request.
            return answerInTask(request, context: context, responder: responder)
        }
        running.add(1, ordering: .relaxed)
        loopCall.start(request, responder: responder, streamingBodiesAbove: collectLimit)
    }

    /// The access-log line and metrics of a loop call answered with `response`; `running` counts it no more.
    fileprivate func finishCall(
        _ exchange: inout Exchange, response: consuming HTTPServerResponse, cancelled: Bool
    ) -> HTTPServerResponse {
        defer { running.subtract(1, ordering: .releasing) }
        return finishHandled(&exchange, bodyRejectionStatus: nil, cancelled: cancelled, response: consume response)
    }

    /// One call sent by callback on the loop: made by ``decide(_:)`` (the exchange moved in), started by
    /// ``start(_:context:responder:)`` and kept until its answer is given. Loop thread only: its state is assigned
    /// whole on the loop, with no dynamic exclusivity check.
    final class LoopCall: HTTPServerCancellation, MoyaLoopCompletion, @unchecked Sendable {
        let handler: GatewayHandler
        @exclusivity(unchecked) var exchange: Exchange
        let call: Call
        let isHead: Bool
        /// The responder the answer goes to, from ``GatewayHandler/start(_:context:responder:)``.
        @exclusivity(unchecked) var responder: (any HTTPServerResponder)?
        /// The Moya target sent, once started (for its retry count).
        @exclusivity(unchecked) var target: GatewayTarget?
        /// Whether the call is its upstream circuit's trial call.
        @exclusivity(unchecked) var isTrial = false
        /// The request under way, for cancelling it.
        @exclusivity(unchecked) var sent: MoyaLoopRequest?

        init(handler: GatewayHandler, exchange: consuming Exchange, call: Call, isHead: Bool) {
            self.handler = handler
            self.exchange = exchange
            self.call = call
            self.isHead = isHead
        }

        /// Sends the call through the upstream's circuit (a refusal is answered at once) and Moya's pipeline, for
        /// `responder`. Read here, in place, the call is not copied.
        func start(
            _ request: borrowing HTTPServerRequest, responder: any HTTPServerResponder, streamingBodiesAbove: Int
        ) {
            self.responder = responder
            switch handler.admit(call, exchange: &exchange) {
            case .refused(let answer):
                responder.respond(handler.finishCall(&exchange, response: answer, cancelled: false))
                return
            case .admitted(let trial):
                isTrial = trial
            }
            let target = call.target(for: exchange.caller, request: request, body: [])
            self.target = target
            responder.cancellation = self
            sent = call.upstream.provider.request(
                onLoop: MultiTarget(target), streamingBodiesAbove: streamingBodiesAbove, completion: self)
        }

        /// The server gave up on the request (its client went away, the drain timed out): the call is cancelled,
        /// and its result logged as the handler's would be (499).
        func cancel() {
            sent?.cancel()
        }

        /// The call's result: the response to the client, the access-log line and metrics, as `handle` makes them.
        func requestCompleted(_ result: consuming Result<Moya.Response, MoyaError>) {
            guard let cancelled = completing(), let responder else { return }
            if call.upstream.breaker != nil {
                report(UpstreamCircuit.outcome(of: result, cancelled: cancelled))
            }
            let response = handler.response(for: result, call: call, isHead: isHead, exchange: &exchange)
            responder.respond(handler.finishCall(&exchange, response: consume response, cancelled: cancelled))
        }

        /// The gateway's plugins on a network upstream only prepare requests (`PreparingTransportPlugin`): with no
        /// other plugin, nothing reads a `Moya.Response`, and the client's response is relayed as it came.
        var acceptsClientResponses: Bool { true }

        /// ``requestCompleted(_:)`` for the client's response as it came: the same response, log line and metrics.
        func requestCompleted(exchanged result: consuming Result<HTTPClientResponseOrStream, MoyaError>) {
            guard let cancelled = completing(), let responder else { return }
            if call.upstream.breaker != nil {
                report(UpstreamCircuit.outcome(ofExchanged: result, cancelled: cancelled))
            }
            let response: HTTPServerResponse
            switch consume result {
            case .success(let exchanged):
                response = handler.response(
                    forExchanged: consume exchanged, call: call, isHead: isHead, exchange: &exchange)
            case .failure(let error):
                response = handler.response(for: .failure(error), call: call, isHead: isHead, exchange: &exchange)
            }
            // Handed on: the binding would otherwise keep a copy until the call returns.
            responder.respond(handler.finishCall(&exchange, response: consume response, cancelled: cancelled))
        }

        /// The request is no longer under way: its retries are noted. Whether the server gave up on the request; nil
        /// if it was never started.
        private func completing() -> Bool? {
            sent = nil
            guard let responder else { return nil }
            exchange.record.retries = target?.retryCount ?? 0
            return responder.isCancelled
        }

        /// Records `outcome` in the upstream's circuit.
        private func report(_ outcome: CircuitBreaker.Outcome) {
            handler.report(outcome, to: call, isTrial: isTrial, snapshot: exchange.snapshot)
        }
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
        guard call.upstream.breaker != nil else { return }
        report(
            UpstreamCircuit.outcome(of: result, cancelled: cancelled), to: call, isTrial: isTrial, snapshot: snapshot)
    }

    /// Records `outcome` in `call`'s upstream circuit (if it has one).
    func report(_ outcome: CircuitBreaker.Outcome, to call: Call, isTrial: Bool, snapshot: GatewaySnapshot) {
        guard let breaker = call.upstream.breaker else { return }
        UpstreamCircuit.report(
            breaker.record(outcome, trial: isTrial, now: EventLoop.now()),
            upstream: call.route.upstream.name, breaker: breaker, snapshot: snapshot)
    }
}
