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

/// Stub responders: a stub's answer drawn, called and mapped to the response, and its retries.
extension GatewayHandler {
    /// The stub's answer to this call, drawn now: the request as the upstream would see it (after the route's
    /// rewrite), with the client's headers and `body`.
    func stubAnswer(
        _ responder: StubResponder, exchange: Exchange, request: borrowing HTTPServerRequest,
        call: Call, body: [UInt8]
    ) -> StubAnswer {
        let stubRequest = StubRequest(
            method: request.head.method, target: Self.stubTarget(call), headers: request.head.headers,
            body: body, requestID: exchange.requestID)
        return responder.answer(for: stubRequest, deadline: call.route.config.timeout.map { exchange.started + $0 })
    }

    /// The target a stub matches: the upstream's, without a spied upstream's base path (recorded without it).
    static func stubTarget(_ call: Call) -> String {
        guard let base = call.upstream.upstream.baseURL?.basePath, !base.isEmpty, base != "/" else {
            return call.upstreamPath
        }
        let (path, query) = ExchangeRecorder.split(call.upstreamPath)
        let stripped = ExchangeRecorder.dropBase(base, from: path)
        return query.map { stripped + "?" + $0 } ?? stripped
    }

    /// A call a stub responder answers: its answer drawn now, or the draw a coalesced call's shared call makes.
    struct StubCall {
        var answer: StubAnswer?
        var draw: StubDraw?
    }

    /// The call's stub answer when its upstream has a responder: drawn now, or, for a `shared` (coalesced) call, when
    /// the shared call asks for it, so that a flight draws once.
    ///
    /// Not inlined: in `respond`, its `ContinuousClock.Instant` temporaries (a resilient type, sized at run time) cost
    /// every call of that async function two task allocations, stub or not.
    @inline(never)
    func stubCall(
        _ call: Call, exchange: Exchange, request: borrowing HTTPServerRequest, body: [UInt8],
        shared: Bool
    ) -> StubCall? {
        guard let responder = call.upstream.responder else { return nil }
        // A spy (an upstream with a network client) draws at once: a call no recorded response matches is proxied.
        guard shared, call.upstream.client == nil else {
            let answer = stubAnswer(responder, exchange: exchange, request: request, call: call, body: body)
            return answer.unmatched && call.upstream.client != nil ? nil : StubCall(answer: answer, draw: nil)
        }
        let stubRequest = StubRequest(
            method: request.head.method, target: Self.stubTarget(call), headers: request.head.headers,
            body: body, requestID: exchange.requestID)
        return StubCall(
            answer: nil,
            draw: StubDraw(
                pending: stubRequest, responder: responder,
                deadline: call.route.config.timeout.map { exchange.started + $0 }))
    }

    /// The client's response for a stub responder's answer: as any stub's, with the answer's own head and body, and
    /// a fault acting on the client's connection acted out.
    func stubResponse(
        for result: Result<Moya.Response, MoyaError>, answer: StubAnswer, call: Call,
        request: borrowing HTTPServerRequest, exchange: inout Exchange
    ) -> HTTPServerResponse {
        let answered = response(
            for: result, call: call, isHead: MethodTest.isHead(request.head.method), stub: answer,
            exchange: &exchange)
        if answer.unmatched { exchange.record.upstreamError = "no stub response matched" }
        guard let fault = answer.clientFault, case .success(let moya) = result,
            moya.statusCode == answer.status
        else { return answered }
        exchange.record.upstreamError = "stub fault: \(fault.kind.rawValue)"
        return StubFaultResponse.applying(
            fault, to: answered, isHead: MethodTest.isHead(request.head.method), loop: request.loop)
    }

    /// A stub call with the route's `retries`: a failure an upstream's would be retried for (a reset or a close
    /// before any answer; a status in `retries.statuses`) draws a new answer, within the attempts, for idempotent
    /// methods, and not past the route's deadline. Returns the last result and its draw.
    func retriedStubResult(
        _ first: GatewayTarget, call: Call, exchange: Exchange,
        request: HTTPServerRequest, body: [UInt8]
    ) async
        -> (Result<Moya.Response, MoyaError>, StubAnswer?)
    {
        var target = first
        var attempt = 0
        while true {
            let result = await call.upstream.provider.requestInCurrentTask(MultiTarget(target))
            guard let retries = call.route.config.retries, attempt + 1 < retries.attempts,
                request.head.method.isIdempotent, Self.stubResultIsRetried(result, statuses: retries.statuses),
                let responder = call.upstream.responder
            else { return (result, target.stub) }
            let deadline = call.route.config.timeout.map { exchange.started + $0 }
            if let deadline, ContinuousClock.now + (retries.backoff ?? .zero) >= deadline {
                return (result, target.stub)
            }
            if let backoff = retries.backoff {
                do { try await _Concurrency.Task.sleep(for: backoff) } catch { return (result, target.stub) }
            }
            attempt += 1
            first.countRetry()
            let answer = stubAnswer(responder, exchange: exchange, request: request, call: call, body: body)
            target = call.target(
                for: exchange.caller, request: request, body: body, forwardsHeaders: call.upstream.logsExchanges,
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
            guard nsError.domain == NSURLErrorDomain, let fault = nsError.userInfo[StubFaultError.faultKey] as? String
            else {
                return false
            }
            return fault == StubFaultConfig.Kind.connectionReset.rawValue
                || fault == StubFaultConfig.Kind.emptyResponse.rawValue
        }
    }
}
