import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPWire
import Locking
import Moya
import Synchronization

/// A stub upstream's answers compiled for serving: its `responses` (matchers, `sequence` counters, templates) and its
/// default answer, with the generators behind their latencies, injected errors and faults. Made with the upstream's
/// provider, so a reload starts every sequence again.
///
/// Choosing an answer allocates nothing for a response without templates: the matchers compare bytes in place and a
/// plain answer's head, body and Moya sample are made once, here.
final class StubResponder: Sendable {
    private let responses: [CompiledStubResponse]
    private let fallback: CompiledStubAnswer?
    private let random: StubRandom

    init(stub: StubConfig, seed: UInt64? = nil) {
        let base = seed ?? stub.seed ?? UInt64.random(in: 0...UInt64.max)
        random = StubRandom(seed: base)
        var derived = SplitMix64(seed: base ^ 0x5DEE_CE66_D1CE_4E5B)
        responses = stub.responses.map { response in
            CompiledStubResponse(response, seeds: &derived)
        }
        fallback = stub.hasDefault ? CompiledStubAnswer(stub.defaultAnswer, parameterNames: [], seed: derived.next()) : nil
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
    func answer(for request: inout StubRequest, deadline: ContinuousClock.Instant?) -> StubAnswer {
        var chosen: CompiledStubAnswer?
        for response in responses where response.matcher.matches(request) {
            chosen = response.nextAnswer()
            if chosen?.usesPathParameters == true {
                request.pathParameters = response.matcher.path.parameters(in: request.path)
            }
            break
        }
        guard let answer = chosen ?? fallback else {
            let body = ErrorBody.bytes(.notFound, requestID: request.requestID)
            return StubAnswer(prepared: StubPrepared(status: 404, headers: StubPrepared.errorHeaders, body: body),
                              delay: 0, clientFault: nil, unmatched: true)
        }
        return answer.draw(for: request, random: random, deadline: deadline)
    }
}

/// A request's answer from a stub, as drawn: what Moya answers after `delay`, and a fault to act out on the client's
/// connection once it has.
struct StubAnswer: Sendable {
    let prepared: StubPrepared
    /// Seconds before Moya answers (the stub's latency).
    let delay: Double
    /// A fault acting on the client's connection (`mode: client`); the answer itself is what it cuts or slows.
    let clientFault: StubFaultConfig?
    /// No response matched and the stub has no default answer: the 404.
    let unmatched: Bool

    init(prepared: StubPrepared, delay: Double, clientFault: StubFaultConfig?, unmatched: Bool = false) {
        self.prepared = prepared
        self.delay = delay
        self.clientFault = clientFault
        self.unmatched = unmatched
    }
}

/// An answer ready to give: the status, the headers as the client gets them (without the request id), the body, and
/// the `EndpointSampleResponse` Moya's stub returns for it. Made once for a plain answer, per request for a templated
/// one.
final class StubPrepared: @unchecked Sendable {
    // Immutable after init; `EndpointSampleResponse` (an `HTTPURLResponse`, an `NSError`) is not `Sendable` by type.
    let status: Int
    let headers: HTTPWire.HTTPHeaders
    let body: [UInt8]
    let sample: EndpointSampleResponse

    init(status: Int, headers: HTTPWire.HTTPHeaders, body: [UInt8], sample: EndpointSampleResponse? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.sample = sample ?? .networkResponse(status, Data(body))
    }

    /// A failure as an upstream's: Moya's `.networkError`, which the gateway maps to 502 (504 for a timeout).
    init(failure: NSError) {
        status = 502
        headers = StubPrepared.errorHeaders
        body = []
        sample = .networkError(failure)
    }

    /// The fields of the gateway's JSON error bodies, as the client gets them.
    static let errorHeaders = ProxyHeaders.downstream(from: ["Content-Type": ErrorBody.contentType])
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
    static let timedOut = NSError(domain: NSURLErrorDomain, code: NSURLErrorTimedOut,
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
    /// The answer when it has no template.
    private let plain: StubPrepared?
    /// `error_status`'s answer (its headers, no body).
    private let failing: StubPrepared
    /// Faults and the injected error by cumulative rate: a draw below an entry's bound gets it.
    private let outcomes: [(bound: Double, outcome: Outcome)]
    private let drawState: Locked<(latency: StubLatency, rolls: SplitMix64)>
    /// Whether a request's answer needs a draw (a latency or a rate).
    private let draws: Bool
    let usesPathParameters: Bool

    private enum Outcome: Sendable {
        case error
        case fault(StubFaultConfig, StubPrepared?)
    }

    init(_ config: StubAnswerConfig, parameterNames: [String], seed: UInt64) {
        self.config = config
        let headers = ProxyHeaders.downstream(from: config.headers)
        plain = config.bodyTemplate == nil && config.headerTemplates.isEmpty
            ? StubPrepared(status: config.status, headers: headers, body: config.body,
                           sample: Self.sample(status: config.status, headers: config.headers, body: config.body))
            : nil
        failing = StubPrepared(status: config.errorStatus, headers: headers, body: [],
                               sample: Self.sample(status: config.errorStatus, headers: config.headers, body: []))
        var bound = 0.0
        var outcomes: [(bound: Double, outcome: Outcome)] = []
        for fault in config.faults where fault.rate > 0 {
            bound += fault.rate
            let failure = fault.mode == .upstream && fault.kind != .slowBody
                ? StubPrepared(failure: StubFaultError.error(fault.kind)) : nil
            outcomes.append((bound, .fault(fault, failure)))
        }
        if config.errorRate > 0 {
            bound += config.errorRate
            outcomes.append((bound, .error))
        }
        self.outcomes = outcomes
        drawState = Locked((StubLatency(config.latency ?? .fixed(config.delay), seed: seed),
                            SplitMix64(seed: seed ^ 0x9E37_79B9_7F4A_7C15)))
        draws = !config.isImmediate || !outcomes.isEmpty
        usesPathParameters = config.bodyTemplate?.usesPathParameters == true
            || config.headerTemplates.contains { $0.template.usesPathParameters }
    }

    /// A sample made once: `HTTPURLResponse` creation (URL parsing, header dictionaries) is too costly per request.
    private static func sample(status: Int, headers: HTTPWire.HTTPHeaders, body: [UInt8]) -> EndpointSampleResponse {
        var fields: [String: String] = [:]
        for field in headers { fields[field.name] = field.value }
        let url = URL(string: "http://stub.invalid/") ?? URL(fileURLWithPath: "/")
        guard let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields) else {
            return .networkResponse(status, Data(body))
        }
        return .response(response, Data(body))
    }

    func draw(for request: borrowing StubRequest, random: StubRandom, deadline: ContinuousClock.Instant?) -> StubAnswer {
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
        var prepared: StubPrepared
        var clientFault: StubFaultConfig?
        switch outcome {
        case .error?:
            prepared = failing
        case .fault(let fault, let failure)?:
            if let failure {
                prepared = failure
            } else {
                prepared = render(request, random: random)
                if fault.mode == .client {
                    clientFault = fault
                } else {
                    // A slow upstream body: the gateway collects it, so its answer comes that much later.
                    delay += fault.duration?.seconds ?? 0
                }
            }
        case nil:
            prepared = render(request, random: random)
        }
        if let deadline {
            let left = (deadline - ContinuousClock.now).seconds
            if delay >= left {
                // The route's timeout ends the wait as it ends an upstream's: 504 at the deadline.
                delay = max(left, 0)
                prepared = StubPrepared(failure: StubFaultError.timedOut)
                clientFault = nil
            }
        }
        return StubAnswer(prepared: prepared, delay: delay, clientFault: clientFault)
    }

    /// The answer filled in for `request` (the plain one when there is nothing to fill in).
    private func render(_ request: borrowing StubRequest, random: StubRandom) -> StubPrepared {
        if let plain { return plain }
        let body = config.bodyTemplate?.render(request, random: random) ?? config.body
        var headers = config.headers
        if !config.headerTemplates.isEmpty {
            var fields = Array(config.headers)
            for header in config.headerTemplates where fields.indices.contains(header.index) {
                fields[header.index].value = String(decoding: header.template.render(request, random: random), as: UTF8.self)
            }
            headers = HTTPWire.HTTPHeaders(fields.map { ($0.name, $0.value) })
        }
        return StubPrepared(status: config.status, headers: ProxyHeaders.downstream(from: headers), body: body)
    }
}

/// A response's `match` compiled: methods, the path pattern, query, headers and JSON body fields, checked in that
/// order (cheapest first) without allocating, except for a JSON body, which is parsed once it is needed.
struct StubMatcher: Sendable {
    let methods: [HTTPMethod]?
    let path: PathPattern
    let query: [(name: [UInt8], value: [UInt8])]
    let headers: [StubNameValue]
    let json: [StubJSONField]

    init(_ match: StubMatchConfig) {
        methods = match.methods
        if let exact = match.path {
            path = .exact(exact)
        } else if let prefix = match.pathPrefix {
            path = .prefix(prefix)
        } else if let template = match.pathParams {
            path = .template(template)
        } else {
            path = .any
        }
        query = match.query.map { (Array($0.name.utf8), Array($0.value.utf8)) }
        headers = match.headers
        json = match.json
    }

    func matches(_ request: borrowing StubRequest) -> Bool {
        if let methods, !(methods.contains(request.method) || (request.method == .head && methods.contains(.get))) {
            return false
        }
        guard path.matches(request.path) else { return false }
        if !query.isEmpty {
            guard let raw = request.query else { return false }
            for condition in query where !StubQuery.contains(name: condition.name, value: condition.value, in: raw) {
                return false
            }
        }
        for condition in headers where request.headers.first(name: condition.name) != condition.value {
            return false
        }
        if !json.isEmpty && !StubJSON.matches(json, body: request.body) { return false }
        return true
    }
}

/// A call's stub answer: drawn when the call is decided, or, for a coalesced call, when the shared call first asks
/// (its stub closure), so that a flight steps a sequence and draws a fault once rather than once per caller.
final class StubDraw: Sendable {
    private enum State {
        case pending(StubRequest, StubResponder, ContinuousClock.Instant?)
        case drawn(StubAnswer)
    }

    private let state: Locked<State>

    init(answer: StubAnswer) { state = Locked(.drawn(answer)) }

    init(pending request: StubRequest, responder: StubResponder, deadline: ContinuousClock.Instant?) {
        state = Locked(.pending(request, responder, deadline))
    }

    var answer: StubAnswer {
        state.withLock { state in
            switch state {
            case .drawn(let answer):
                return answer
            case .pending(var request, let responder, let deadline):
                let answer = responder.answer(for: &request, deadline: deadline)
                state = .drawn(answer)
                return answer
            }
        }
    }
}
