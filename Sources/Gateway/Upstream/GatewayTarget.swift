import Foundation
import HTTPWire
import Moya
import Synchronization

/// One proxied call as a Moya `TargetType`: the upstream, the exact origin-form target to send, the method, the body and
/// the headers. Wrapped in `MultiTarget` and sent through the upstream's `MoyaProvider<MultiTarget>`.
///
/// A class: plugins get it back out of the `MultiTarget` existential with `as?`, which for a struct this size copies
/// (and retains) every field each time.
final class GatewayTarget: TargetType, AccessTokenAuthorizable {
    /// The upstream's provider, whose configuration the target reads (held by reference: copying the configuration
    /// into every target cost a dozen retains per request).
    let provider: UpstreamProvider
    /// The upstream's origin (`http://host:port`), or `http://stub.invalid` for a stub; computed once per upstream.
    let origin: String
    /// Origin-form path and query, exactly as routed and rewritten (`/v1/users/7?x=1`).
    let upstreamTarget: String
    let method: Moya.Method
    let body: Data
    /// The client's body when it is relayed as it arrives rather than collected into `body` (sent by
    /// ``ForwardingHeadersPlugin`` on the transport lane only).
    let streamedBody: UpstreamRequestBody?
    /// The client's side of a WebSocket when the call is its handshake (sent by ``ForwardingHeadersPlugin``).
    let tunnel: WebSocketTunnel?
    /// Headers that take part in the coalescing identity (forwarded upstream): the endpoint's. Empty when the call
    /// is not shared.
    let stableHeaders: [String: String]
    /// Headers specific to this caller (request id, forwarding headers, and every forwarded header when the call is
    /// not shared); added by ``ForwardingHeadersPlugin`` so they do not split a coalesced flight.
    let perRequestHeaders: HTTPFields
    /// The coalescing key when this request may share an upstream call; `nil` sends it alone.
    let flightKey: String?
    /// The route's whole-request timeout, if any.
    let timeout: Duration?
    /// When the route's timeout runs out, retries included (counted from the target's creation).
    let deadline: ContinuousClock.Instant?
    /// The route's retry policy, if any (see ``RouteRetryPlugin``).
    let retries: RouteConfig.Retries?
    /// Who the call is made for, as the rate limit keys callers (for the fair share of a full upstream pool).
    let callerKey: Int?
    /// A stub upstream's answer to this call, when the stub has a responder (`responses`, templates, faults): drawn
    /// when the call was decided, or (``stubDraw``) when a coalesced call's shared call asks for it. The provider's
    /// stub closure and sample read it (see ``stub``).
    let stubAnswer: StubAnswer?
    let stubDraw: StubDraw?
    /// The retries ``RouteRetryPlugin`` decided for this request (for the access log); held inline, not in an object
    /// of its own.
    private let retriesDecided = Atomic<Int>(0)
    /// Set when this target's own request is prepared for sending (``ForwardingHeadersPlugin``): a coalesced caller
    /// whose target was never sent was answered with another caller's response (a follower).
    private let sent = Atomic<Bool>(false)

    init(
        provider: UpstreamProvider, origin: String, upstreamTarget: String, method: Moya.Method, body: Data,
        streamedBody: UpstreamRequestBody? = nil, tunnel: WebSocketTunnel? = nil, stableHeaders: [String: String],
        perRequestHeaders: HTTPFields, flightKey: String?, timeout: Duration?, retries: RouteConfig.Retries?,
        callerKey: Int? = nil, stubAnswer: StubAnswer? = nil, stubDraw: StubDraw? = nil
    ) {
        self.callerKey = callerKey
        self.provider = provider
        self.origin = origin
        self.upstreamTarget = upstreamTarget
        self.method = method
        self.body = body
        self.streamedBody = streamedBody
        self.tunnel = tunnel
        self.stableHeaders = stableHeaders
        self.perRequestHeaders = perRequestHeaders
        self.flightKey = flightKey
        self.timeout = timeout
        self.deadline = timeout.map { ContinuousClock.now + $0 }
        self.retries = retries
        self.stubAnswer = stubAnswer
        self.stubDraw = stubDraw
    }

    /// The stub's answer to this call, if a responder answers it.
    var stub: StubAnswer? { stubAnswer ?? stubDraw?.answer }

    /// The stub answer's delay, read without copying the answer.
    var stubDelay: Double {
        if let delay = stubAnswer?.delay { return delay }
        return stubDraw?.answer.delay ?? 0
    }

    /// Whether a responder answers this call (see ``stub``).
    var isStubbed: Bool { stubAnswer != nil || stubDraw != nil }

    var baseURL: URL { URL(string: origin) ?? URL(fileURLWithPath: "/") }
    var path: String { "" }
    var task: Moya.Task { body.isEmpty ? .requestPlain : .requestData(body) }
    /// Every header the target sends (the endpoint carries only ``stableHeaders``; see ``perRequestHeaders``).
    var headers: [String: String]? {
        var all = stableHeaders
        ProxyHeaders.merge(perRequestHeaders, into: &all)
        return all
    }
    var sampleData: Data { Data(provider.upstream.stub?.body ?? []) }

    var validationType: ValidationType {
        // A handshake's 101 is its success, whatever the upstream's validation says of other answers.
        if tunnel != nil { return .none }
        switch provider.upstream.validation {
        case .none: return .none
        case .success: return .successCodes
        case .successAndRedirect: return .successAndRedirectCodes
        }
    }

    var authorizationType: AuthorizationType? {
        switch provider.upstream.accessToken?.type {
        case .bearer?: return .bearer
        case .basic?: return .basic
        case .custom(let scheme)?: return .custom(scheme)
        case nil: return provider.upstream.oauth2 != nil ? .bearer : nil
        }
    }

    /// How many times the request was sent again.
    var retryCount: Int { retriesDecided.load(ordering: .relaxed) }

    /// Counts a retry ``RouteRetryPlugin`` decided.
    func countRetry() { retriesDecided.add(1, ordering: .relaxed) }

    /// Records that the request built from this target is being sent (see ``wasSent``).
    func markSent() { sent.store(true, ordering: .relaxed) }

    /// Whether a request built from this target was sent: false for a coalesced follower, which shared another
    /// caller's call.
    var wasSent: Bool { sent.load(ordering: .relaxed) }
}

extension GatewayTarget {
    /// The gateway target a plugin is handed (inside a `MultiTarget`), if it is one.
    ///
    /// Compares the dynamic types instead of casting with `as?`: both types are exact (a final class, a struct), and
    /// a dynamic cast out of an existential cost more than the rest of a stubbed request's plugin step.
    static func unwrapped(_ target: TargetType) -> GatewayTarget? {
        gatewayTarget(asOrIn: target)
    }

    /// The gateway target inside `multi`, if it holds one.
    static func unwrapped(_ multi: MultiTarget) -> GatewayTarget? {
        withUnsafePointer(to: multi) { gatewayTarget(inMultiTargetAt: UnsafeRawPointer($0)) }
    }

    /// `target` itself when its dynamic type is `GatewayTarget`, the one inside it when it is a `MultiTarget` holding
    /// one (opened from the existential: the checks compare metatypes).
    private static func gatewayTarget<Opened: TargetType>(asOrIn target: Opened) -> GatewayTarget? {
        if Opened.self == GatewayTarget.self {
            return withUnsafePointer(to: target) { UnsafeRawPointer($0).load(as: GatewayTarget.self) }
        }
        guard Opened.self == MultiTarget.self else { return nil }
        return withUnsafePointer(to: target) { gatewayTarget(inMultiTargetAt: UnsafeRawPointer($0)) }
    }

    /// The gateway target in the `MultiTarget` at `pointer`, read in place: taking its `target` out copies the
    /// existential (a retain and a value-witness call) twice per plugin hook. `MultiTarget` has a single case, so its
    /// layout is its payload's, an `any TargetType` container: three words of inline value, then the dynamic type's
    /// metadata (Swift's stable existential layout); a class instance is the first of those words.
    private static func gatewayTarget(inMultiTargetAt pointer: UnsafeRawPointer) -> GatewayTarget? {
        let type = pointer.load(fromByteOffset: 3 * MemoryLayout<UnsafeRawPointer>.size, as: Any.Type.self)
        guard type == GatewayTarget.self else { return nil }
        return pointer.load(as: GatewayTarget.self)
    }
}
