import Foundation
import HTTPWire
import Locking
import Moya
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A stub upstream's answers compiled for serving: its `responses` (matchers, `sequence` counters, templates) and its
/// default answer, with the generators behind their latencies, injected errors and faults. Made with the upstream's
/// provider, so a reload starts every sequence again.
///
/// Choosing an answer allocates nothing for a response without templates: the matchers compare bytes in place and a
/// plain answer's head, body and Moya sample are made once, here.
final class StubResponder: Sendable {
    private let responses: [CompiledStubResponse]
    /// The responses' cheap conditions (method, first path segment, segment count), parallel to ``responses``:
    /// plain values, so that the responses a request cannot match are passed over without touching them.
    private let prefilters: [StubPrefilter]
    /// The header names the responses' conditions use (each looked up once per request, for the prefilter).
    private let headerNames: [StubPrefilter.HeaderName]
    private let fallback: CompiledStubAnswer?
    private let random: StubRandom

    init(stub: StubConfig, seed: UInt64? = nil) {
        let base = seed ?? stub.seed ?? UInt64.random(in: 0...UInt64.max)
        random = StubRandom(seed: base)
        var derived = SplitMix64(seed: base ^ 0x5DEE_CE66_D1CE_4E5B)
        responses = stub.responses.map { response in
            CompiledStubResponse(response, seeds: &derived)
        }
        prefilters = responses.map { StubPrefilter($0.matcher) }
        var names: [String] = []
        for response in responses {
            for condition in response.matcher.headers
            where !names.contains(where: { $0.equalsIgnoringASCIICase(condition.name) }) {
                names.append(condition.name)
            }
        }
        headerNames = names.map(StubPrefilter.HeaderName.init)
        fallback =
            stub.hasDefault ? CompiledStubAnswer(stub.defaultAnswer, parameterNames: [], seed: derived.next()) : nil
    }

    /// Whether a stub needs a responder: one with `responses`, templates, faults, a `seed`, or a delay (which the
    /// route's `timeout` must be able to cut short, as it cuts an upstream's wait). A plain stub that answers at once
    /// keeps the provider's prebuilt answers, given on the event loop.
    static func isNeeded(for stub: StubConfig) -> Bool {
        !stub.responses.isEmpty || stub.bodyTemplate != nil || !stub.headerTemplates.isEmpty || !stub.faults.isEmpty
            || stub.seed != nil || stub.latency != nil || stub.delay > .zero
    }

    /// The answer to `request`: the first response whose match holds (in file order), else the default answer, else
    /// 404. Steps a matched sequence and draws the latency and any fault. `deadline`: the route's, after which the
    /// answer is a timeout (504) at the deadline.
    func answer(for request: borrowing StubRequest, deadline: ContinuousClock.Instant?) -> StubAnswer {
        // The path's bytes are taken once for every response tried; the chosen one's parameters are found there too.
        let found = request.withPathBytes { firstMatch(request, pathBytes: $0) }
        let chosen = found?.answer
        let parameters = found?.parameters
        guard let answer = chosen ?? fallback else {
            return StubAnswer(
                status: 404, headers: StubAnswer.errorHeaders,
                body: ErrorBody.bytes(.notFound, requestID: request.requestID), unmatched: true)
        }
        return answer.draw(for: request, parameters: parameters, random: random, deadline: deadline)
    }

    /// The first response that matches `request` (whose path's UTF-8 is `pathBytes`): its answer for this request (a
    /// sequence steps), and where its path parameters are when the answer's templates use them.
    private func firstMatch(_ request: borrowing StubRequest, pathBytes: UnsafeBufferPointer<UInt8>)
        -> (answer: CompiledStubAnswer?, parameters: StubPathParameters?)?
    {
        let key = StubPrefilter.Key(request, pathBytes: pathBytes, headerNames: headerNames)
        var found: Int?
        for index in prefilters.indices
        where prefilters[index].admits(key)
            && responses[index].matcher.matches(request, pathBytes: pathBytes, methodChecked: key.decidesMethod)
        {
            found = index
            break
        }
        guard let found else { return nil }
        let response = responses[found]
        let answer = response.nextAnswer()
        guard answer?.usesPathParameters == true else { return (answer, nil) }
        return (answer, response.matcher.path.parameterRanges(bytes: pathBytes))
    }
}

/// A request's answer from a stub, as drawn: the status, headers (as the client gets them, without the request id)
/// and body; what Moya answers after `delay`; and a fault to act out on the client's connection once it has.
/// Immutable, and shared: an answer with nothing drawn per request (no template, latency or rate) is made once and
/// given to every request; a templated one is made per request, its Moya sample when Moya asks for it.
final class StubAnswer: @unchecked Sendable {
    // Immutable after init; `EndpointSampleResponse` (an `HTTPURLResponse`, an `NSError`) is not `Sendable` by type.
    let status: Int
    let headers: HTTPFields
    let body: [UInt8]
    /// Seconds before Moya answers (the stub's latency).
    let delay: Double
    /// A fault acting on the client's connection (`mode: client`); the answer itself is what it cuts or slows.
    let clientFault: StubFaultConfig?
    /// No response matched and the stub has no default answer: the 404.
    let unmatched: Bool
    /// The sample made once for an answer given again and again; nil: made from the status and body when asked.
    private let prebuiltSample: EndpointSampleResponse?

    init(
        status: Int, headers: HTTPFields, body: [UInt8], sample: EndpointSampleResponse? = nil,
        delay: Double = 0, clientFault: StubFaultConfig? = nil, unmatched: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        prebuiltSample = sample
        self.delay = delay
        self.clientFault = clientFault
        self.unmatched = unmatched
    }

    /// A failure as an upstream's: Moya's `.networkError`, which the gateway maps to 502 (504 for a timeout).
    convenience init(failure: NSError, delay: Double = 0) {
        self.init(status: 502, headers: StubAnswer.errorHeaders, body: [], sample: .networkError(failure), delay: delay)
    }

    /// What Moya's stub answers.
    var sample: EndpointSampleResponse { prebuiltSample ?? .networkResponse(status, Data(body)) }

    /// The same without copying a rendered body into `Data`, for a provider whose plugins do not read a response's
    /// data (none of the gateway's does, but the exchange logger): the gateway takes the body from the answer.
    var sampleWithoutBody: EndpointSampleResponse { prebuiltSample ?? .networkResponse(status, Data()) }

    /// This answer after `delay`, with `clientFault` (itself when neither changes anything).
    func drawn(delay: Double, clientFault: StubFaultConfig?) -> StubAnswer {
        if delay == self.delay && clientFault == nil && self.clientFault == nil { return self }
        return StubAnswer(
            status: status, headers: headers, body: body, sample: prebuiltSample, delay: delay,
            clientFault: clientFault, unmatched: unmatched)
    }

    /// The fields of the gateway's JSON error bodies, as the client gets them.
    static let errorHeaders = ProxyHeaders.downstream(from: ["Content-Type": ErrorBody.contentType])

    /// The route's deadline passed while the stub was still answering.
    static let timedOut = StubAnswer(failure: StubFaultError.timedOut)
}

/// What a stub fault that acts as a failing upstream looks like to Moya: `NSURLErrorDomain` errors that carry the
/// fault's name (for the access log's `upstream_error`).
enum StubFaultError {
    /// The `userInfo` key naming the fault.
    static let faultKey = "moya-gateway.stub-fault"

    static func error(_ kind: StubFaultConfig.Kind) -> NSError {
        let code: Int
        switch kind {
        case .connectionReset, .truncatedBody: code = NSURLErrorNetworkConnectionLost
        case .emptyResponse: code = NSURLErrorZeroByteResource
        case .malformedResponse: code = NSURLErrorCannotParseResponse
        case .slowBody: code = NSURLErrorTimedOut
        }
        return NSError(domain: NSURLErrorDomain, code: code, userInfo: [faultKey: kind.rawValue])
    }

    /// The route's deadline passed while the stub was still answering.
    static let timedOut = NSError(
        domain: NSURLErrorDomain, code: NSURLErrorTimedOut,
        userInfo: [faultKey: "route timeout"])
}

/// One `responses` entry compiled: its matcher and its answer or sequence.
private final class CompiledStubResponse: Sendable {
    let matcher: StubMatcher
    let answers: [CompiledStubAnswer]
    /// How many times a sequence has answered (steps past the last repeat it).
    private let served = Atomic<Int>(0)
    private let isSequence: Bool

    init(_ config: StubResponseConfig, seeds: inout SplitMix64) {
        matcher = StubMatcher(config.match)
        let names = config.match.parameterNames
        answers = config.answers.map { CompiledStubAnswer($0, parameterNames: names, seed: seeds.next()) }
        isSequence = config.isSequence && config.answers.count > 1
    }

    /// The answer for this request: a sequence's next step (shared by every thread), else the one answer.
    func nextAnswer() -> CompiledStubAnswer? {
        guard isSequence else { return answers.first }
        let step = served.wrappingAdd(1, ordering: .relaxed).oldValue
        return answers[min(max(step, 0), answers.count - 1)]
    }
}

/// One answer compiled: prepared once when plain, with its latency sampler, its fault table and the answers a fault
/// or an injected error gives instead.
private final class CompiledStubAnswer: Sendable {
    private let config: StubAnswerConfig
    /// The answer when it has no template (made once, given to every request).
    private let plain: StubAnswer?
    /// `error_status`'s answer (its headers, no body).
    private let failing: StubAnswer
    /// The headers as the client gets them, when none is templated (made once).
    private let downstreamHeaders: HTTPFields
    /// Faults and the injected error by cumulative rate: a draw below an entry's bound gets it.
    private let outcomes: [(bound: Double, outcome: Outcome)]
    private let drawState: Locked<(latency: StubLatency, rolls: SplitMix64)>
    /// Whether a request's answer needs a draw (a latency or a rate).
    private let draws: Bool
    let usesPathParameters: Bool

    private enum Outcome: Sendable {
        case error
        case fault(StubFaultConfig, StubAnswer?)
    }

    init(_ config: StubAnswerConfig, parameterNames: [String], seed: UInt64) {
        self.config = config
        let headers = ProxyHeaders.downstream(from: config.headers)
        downstreamHeaders = headers
        plain =
            config.bodyTemplate == nil && config.headerTemplates.isEmpty
            ? StubAnswer(
                status: config.status, headers: headers, body: config.body,
                sample: Self.sample(status: config.status, headers: config.headers, body: config.body))
            : nil
        failing = StubAnswer(
            status: config.errorStatus, headers: headers, body: [],
            sample: Self.sample(status: config.errorStatus, headers: config.headers, body: []))
        var bound = 0.0
        var outcomes: [(bound: Double, outcome: Outcome)] = []
        for fault in config.faults where fault.rate > 0 {
            bound += fault.rate
            let failure =
                fault.mode == .upstream && fault.kind != .slowBody
                ? StubAnswer(failure: StubFaultError.error(fault.kind)) : nil
            outcomes.append((bound, .fault(fault, failure)))
        }
        if config.errorRate > 0 {
            bound += config.errorRate
            outcomes.append((bound, .error))
        }
        self.outcomes = outcomes
        drawState = Locked(
            (
                StubLatency(config.latency ?? .fixed(config.delay), seed: seed),
                SplitMix64(seed: seed ^ 0x9E37_79B9_7F4A_7C15)
            ))
        draws = !config.isImmediate || !outcomes.isEmpty
        usesPathParameters =
            config.bodyTemplate?.usesPathParameters == true
            || config.headerTemplates.contains { $0.template.usesPathParameters }
    }

    /// A sample made once: `HTTPURLResponse` creation (URL parsing, header dictionaries) is too costly per request.
    private static func sample(status: Int, headers: HTTPFields, body: [UInt8]) -> EndpointSampleResponse {
        var fields: [String: String] = [:]
        for field in headers { fields[field.name] = field.value }
        let url = URL(string: "http://stub.invalid/") ?? URL(fileURLWithPath: "/")
        guard
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
        else {
            return .networkResponse(status, Data(body))
        }
        return .response(response, Data(body))
    }

    func draw(
        for request: borrowing StubRequest, parameters: StubPathParameters?, random: StubRandom,
        deadline: ContinuousClock.Instant?
    ) -> StubAnswer {
        var delay = 0.0
        var outcome: Outcome?
        if draws {
            let (sampled, roll) = drawState.withLock { state -> (Double, Double) in
                let sampled = state.latency.sample().seconds
                let roll = Double(state.rolls.next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
                return (sampled, roll)
            }
            delay = sampled
            outcome = outcomes.first { roll < $0.bound }?.outcome
        }
        if let deadline {
            let left = (deadline - ContinuousClock.now).seconds
            var slowBody = 0.0
            if case .fault(let fault, nil)? = outcome, fault.mode == .upstream {
                slowBody = fault.duration?.seconds ?? 0
            }
            if delay + slowBody >= left {
                // The route's timeout ends the wait as it ends an upstream's: 504 at the deadline.
                return StubAnswer.timedOut.drawn(delay: max(left, 0), clientFault: nil)
            }
        }
        switch outcome {
        case .error?:
            return failing.drawn(delay: delay, clientFault: nil)
        case .fault(let fault, let failure)?:
            if let failure { return failure.drawn(delay: delay, clientFault: nil) }
            if fault.mode == .client {
                return rendered(request, parameters: parameters, random: random, delay: delay, clientFault: fault)
            }
            // A slow upstream body: the gateway collects it, so its answer comes that much later.
            return rendered(
                request, parameters: parameters, random: random, delay: delay + (fault.duration?.seconds ?? 0),
                clientFault: nil)
        case nil:
            return rendered(request, parameters: parameters, random: random, delay: delay, clientFault: nil)
        }
    }

    /// The answer filled in for `request` (the plain one when there is nothing to fill in).
    private func rendered(
        _ request: borrowing StubRequest, parameters: StubPathParameters?, random: StubRandom,
        delay: Double, clientFault: StubFaultConfig?
    ) -> StubAnswer {
        if let plain { return plain.drawn(delay: delay, clientFault: clientFault) }
        let body = config.bodyTemplate?.render(request, parameters: parameters, random: random) ?? config.body
        guard !config.headerTemplates.isEmpty else {
            return StubAnswer(
                status: config.status, headers: downstreamHeaders, body: body, delay: delay,
                clientFault: clientFault)
        }
        var fields = Array(config.headers)
        for header in config.headerTemplates where fields.indices.contains(header.index) {
            fields[header.index].value = String(
                decoding: header.template.render(request, parameters: parameters, random: random),
                as: UTF8.self)
        }
        let headers = HTTPFields(fields.map { ($0.name, $0.value) })
        return StubAnswer(
            status: config.status, headers: ProxyHeaders.downstream(from: consume headers), body: body, delay: delay,
            clientFault: clientFault)
    }
}

/// A coalesced call's stub answer, drawn when the shared call first asks for it (its stub closure), so that a flight
/// steps a sequence and draws a fault once rather than once per caller. (An answer drawn when the call is decided
/// rides on the target itself: ``GatewayTarget/stubAnswer``.)
final class StubDraw: Sendable {
    private enum State {
        case pending(StubRequest, StubResponder, ContinuousClock.Instant?)
        case drawn(StubAnswer)
    }

    private let state: Locked<State>

    init(pending request: StubRequest, responder: StubResponder, deadline: ContinuousClock.Instant?) {
        state = Locked(.pending(request, responder, deadline))
    }

    var answer: StubAnswer {
        state.withLock { state in
            switch state {
            case .drawn(let answer):
                return answer
            case .pending(let request, let responder, let deadline):
                let answer = responder.answer(for: request, deadline: deadline)
                state = .drawn(answer)
                return answer
            }
        }
    }
}
