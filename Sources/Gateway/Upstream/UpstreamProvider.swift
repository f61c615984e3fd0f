import CoreMetrics
import Foundation
import HTTPClientCore
import HTTPWire
import Logging
import Moya
import NetCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `MoyaProvider<MultiTarget>` for one upstream: its HTTP client (pool, timeouts, TLS), stubs, and the
/// access-token, credentials and forwarding plugins. Coalescing uses the provider's `trackInflights`.
final class UpstreamProvider: Sendable {
    let upstream: UpstreamConfig
    let provider: MoyaProvider<MultiTarget>
    let client: HTTPClient?
    /// The provider WebSocket handshakes go through, when a `websocket` route uses this upstream: the same plugins on
    /// a client of its own that speaks HTTP/1.1 only (an upgrade has no HTTP/2 form) and does not count tunnels,
    /// which live as long as their sockets, against `pool.max_connections`.
    let tunnelProvider: MoyaProvider<MultiTarget>?
    private let latency: StubLatencySampler?
    /// A stub's responder when it has `responses`, templates, faults or a `seed` (see ``StubResponder``); a plain stub
    /// answers from the prebuilt samples instead.
    let responder: StubResponder?
    /// A stub upstream's response headers as the client gets them, all but the request id (see
    /// ``ProxyHeaders/downstream(from:received:)``): made once, since answers from the stub carry no transport head.
    let stubResponseHeaders: HTTPFields?
    /// A plain stub's answers made once, when nothing could tell them from Moya's (see ``CannedStubAnswer``).
    let cannedAnswer: CannedStubAnswer?
    /// A stub upstream's body, as an array made once (its answers carry it as `Data`).
    private let stubBody: [UInt8]?
    /// The `HTTPURLResponse` of a stub upstream's normal answer (made once, with ``stubBody``'s bytes as its data): a
    /// response carrying this very object carries those bytes, which then need no comparison.
    private let stubNormalResponse: HTTPURLResponse?
    /// The origin requests go to (`http://stub.invalid` for a stub), computed once. The same string is the transport
    /// lane's known origin, so an endpoint made with it is recognised by one comparison (see `Endpoint(origin:target:…)`).
    let origin: String
    /// Whether upstream exchanges are logged (the gateway's log is at `debug`).
    let logsExchanges: Bool
    /// Whether this is a stub with neither a delay nor a latency distribution: its answers need no waiting.
    let answersInstantly: Bool
    /// Whether the upstream is a stub (never contacted over the network).
    let isStub: Bool
    /// Whether the upstream injects its own credentials (an access token or a login): the client's `Authorization`
    /// is not forwarded.
    let injectsCredentials: Bool

    /// The upstream's circuit (`circuit_breaker`), if it has one.
    let breaker: CircuitBreaker?
    /// The upstream's active health checks (`health_check`), running while this provider is in use.
    private let healthChecker: UpstreamHealthChecker?
    /// The upstream's OAuth 2.0 token source (`access_token: { type: oauth2_client_credentials }`), kept by a reload
    /// that leaves it unchanged.
    let tokenSource: UpstreamTokenSource?

    /// The addresses the health checks have taken out now (for the provider a reload makes next).
    var healthExclusions: Set<SocketAddress> { healthChecker?.excluded ?? [] }

    /// `exchangeLogger`: Moya's network logger, bridged to the gateway's log (debug level only). `retries`: whether
    /// some route to this upstream has `retries` (without, no retrier is asked after every answer). `tunnels`:
    /// whether some route to it relays WebSockets (see ``tunnelProvider``). `health`: where the health checks report
    /// (checks run only with it, for an upstream with `health_check`). `tokenSource`: the upstream's OAuth 2.0 token
    /// source, when it has `access_token: { type: oauth2_client_credentials }`.
    init(
        upstream: UpstreamConfig, group: EventLoopGroup, exchangeLogger: NetworkLoggerPlugin? = nil,
        breaker: CircuitBreaker? = nil, retries: Bool, tunnels: Bool = false,
        health: (telemetry: Telemetry, logger: Logger, inherited: Set<SocketAddress>)? = nil,
        tokenSource: UpstreamTokenSource? = nil
    ) {
        self.upstream = upstream
        self.breaker = breaker
        self.tokenSource = tokenSource
        // The upstream's origin (a stub's too), split once: requests name it and need not parse it again.
        let splitOrigin =
            upstream.baseURL.map { HTTPOrigin(scheme: $0.scheme.lowercased(), host: $0.host, port: $0.port) }
            ?? HTTPOrigin(scheme: "http", host: "stub.invalid", port: 80)
        let knownOrigin = KnownOrigin(splitOrigin)
        self.origin = knownOrigin.prefix
        self.logsExchanges = exchangeLogger != nil
        let responder =
            upstream.stub.flatMap { StubResponder.isNeeded(for: $0) ? StubResponder(stub: $0) : nil }
            ?? upstream.spy.map { StubResponder(stub: $0) }
        self.responder = responder
        // A responder's answers are instant or not one by one (the handler asks it).
        let answersInstantly =
            responder == nil && (upstream.stub.map { $0.latency == nil && $0.delay <= .zero } ?? false)
        self.answersInstantly = answersInstantly
        self.isStub = upstream.isStub
        self.injectsCredentials = upstream.accessToken != nil || upstream.credentials != nil || upstream.oauth2 != nil
        var plugins: [PluginType] = [ForwardingHeadersPlugin()]
        // Before the route's retries: a 401 is its to answer (one retry with a new token).
        if let tokenSource { plugins.append(AccessTokenSourcePlugin(source: tokenSource.source)) }
        if retries { plugins.append(RouteRetryPlugin()) }
        if let token = upstream.accessToken {
            plugins.append(AccessTokenPlugin { _ in token.token.value })
        }
        if let credentials = upstream.credentials {
            let credential = URLCredential(
                user: credentials.user, password: credentials.password.value, persistence: .none)
            plugins.append(CredentialsPlugin(preemptive: credentials.preemptive) { _ in credential })
        }
        if let exchangeLogger { plugins.append(exchangeLogger) }
        let session: Session
        var tunnelSession: Session?
        var clients: [HTTPClient] = []
        if upstream.isStub {
            client = nil
            session = Session(
                client: Session.sharedClient, headers: [:], startRequestsImmediately: false,
                redirectHandler: .doNotFollow)
        } else {
            var configuration = HTTPClient.Configuration()
            configuration.connectTimeout = upstream.timeout.connect
            configuration.responseTimeout = upstream.timeout.response
            configuration.maxConnectionsPerOrigin = upstream.pool.maxConnections
            // `pool.max_connections` is per upstream, not per event loop.
            configuration.maxConnectionsPerOriginTotal = upstream.pool.maxConnections
            configuration.maxWaitTime = upstream.pool.maxWait
            configuration.idleTimeout = upstream.pool.idleTimeout
            configuration.maxWaitingRequestsPerOrigin = upstream.pool.maxWaiting
            configuration.maxRequestsPerConnection =
                upstream.pool.maxRequestsPerConnection == 0
                ? nil : upstream.pool.maxRequestsPerConnection
            configuration.http2 = HTTPClient.Configuration.HTTP2Mode(rawValue: upstream.pool.http2.rawValue) ?? .auto
            configuration.tls = TLSClientConfiguration(verifyPeer: upstream.tls.verify, caFile: upstream.tls.caFile)
            configuration.servers = upstream.servers ?? []
            if upstream.pool.maxShare < 1 {
                configuration.maxShare = upstream.pool.maxShare
                if let telemetry = health?.telemetry {
                    let waits = CoreMetrics.Counter(
                        label: Metric.fairShareWaits, dimensions: [("upstream", upstream.name)],
                        factory: telemetry.metricsFactory)
                    configuration.onFairShareWait = { waits.increment() }
                }
            }
            let client = HTTPClient(configuration: configuration, group: group)
            self.client = client
            clients.append(client)
            session = Session(
                client: client, headers: [:], startRequestsImmediately: false, redirectHandler: .doNotFollow)
            if tunnels {
                configuration.http2 = .never
                configuration.maxConnectionsPerOrigin = .max
                configuration.maxConnectionsPerOriginTotal = nil
                configuration.maxShare = nil
                let tunnelClient = HTTPClient(configuration: configuration, group: group)
                clients.append(tunnelClient)
                tunnelSession = Session(
                    client: tunnelClient, headers: [:], startRequestsImmediately: false,
                    redirectHandler: .doNotFollow)
            }
        }
        if let check = upstream.healthCheck, let health, !clients.isEmpty {
            healthChecker = UpstreamHealthChecker(
                upstream: upstream, check: check, clients: clients, group: group,
                telemetry: health.telemetry, logger: health.logger,
                inherited: health.inherited)
        } else {
            healthChecker = nil
        }
        let stub = upstream.stub
        let sampler = stub.map { StubLatencySampler(stub: $0) }
        let samples = stub.map(StubSamples.init)
        self.latency = sampler
        let stubResponseHeaders = stub.map { stub in
            ProxyHeaders.downstream(from: HTTPFields(stub.headers.map { ($0.name, $0.value) }))
        }
        self.stubResponseHeaders = stubResponseHeaders
        cannedAnswer = stubResponseHeaders.flatMap { headers in
            CannedStubAnswer(
                upstream: upstream, headers: headers, sampler: sampler, logsExchanges: exchangeLogger != nil,
                hasTokenSource: tokenSource != nil)
        }
        self.stubBody = stub?.body
        self.stubNormalResponse = samples?.normalResponse
        // One closure for every endpoint of this upstream, rather than one made per request.
        let sampleResponse: Endpoint.SampleResponseClosure = {
            UpstreamProvider.sampleResponse(stub: samples, sampler: sampler)
        }
        let stubClosure: MoyaProvider<MultiTarget>.StubClosure = { multi in
            // A responder's answer (a stub's, or a spy's recorded one); a spy's other calls go over the network.
            if let target = GatewayTarget.unwrapped(multi), target.isStubbed {
                let delay = target.stubDelay
                return delay <= 0 ? .immediate : .delayed(seconds: delay)
            }
            // The sampler exists for a stub only. Captures no `StubConfig`: copying one is a retain per field.
            guard let sampler else { return .never }
            if answersInstantly { return .immediate }
            let delay = sampler.nextDelay()
            return delay <= 0 ? .immediate : .delayed(seconds: delay)
        }
        provider = Self.makeProvider(
            session: session, plugins: plugins, knownOrigin: knownOrigin,
            sampleResponse: sampleResponse, stubClosure: stubClosure, trackInflights: true)
        // A handshake is never shared: each is its caller's own connection.
        tunnelProvider = tunnelSession.map {
            Self.makeProvider(
                session: $0, plugins: plugins, knownOrigin: knownOrigin, sampleResponse: sampleResponse,
                stubClosure: MoyaProvider<MultiTarget>.neverStub, trackInflights: false)
        }
    }

    /// The upstream's `MoyaProvider` on `session`: gateway targets become endpoints for the known origin (the flight
    /// header carried as their identity and dropped before sending), sent on the transport lane.
    private static func makeProvider(
        session: Session, plugins: [PluginType], knownOrigin: KnownOrigin,
        sampleResponse: @escaping Endpoint.SampleResponseClosure,
        stubClosure: @escaping MoyaProvider<MultiTarget>.StubClosure,
        trackInflights: Bool
    ) -> MoyaProvider<MultiTarget> {
        MoyaProvider<MultiTarget>(
            endpointClosure: { multi in
                guard let target = GatewayTarget.unwrapped(multi) else {
                    return MoyaProvider.defaultEndpointMapping(for: multi)
                }
                var headers = target.stableHeaders
                if let flightKey = target.flightKey { headers[UpstreamProvider.flightHeader] = flightKey }
                // A responder's answer is the call's own (drawn once; the closure holds only the target). Its body
                // goes into Moya's response only for the exchange logger, the one plugin that reads it.
                let sample: Endpoint.SampleResponseClosure
                if target.isStubbed {
                    if target.provider.logsExchanges {
                        sample = { target.stub?.sample ?? .networkResponse(502, Data()) }
                    } else {
                        sample = { target.stub?.sampleWithoutBody ?? .networkResponse(502, Data()) }
                    }
                } else {
                    sample = sampleResponse
                }
                // Origin and target kept apart: the transport lane sends the target without a URL string to split.
                return Endpoint(
                    origin: target.origin, target: target.upstreamTarget,
                    sampleResponseClosure: sample, method: target.method, task: target.task,
                    httpHeaderFields: headers)
            },
            requestClosure: { endpoint, done in
                do {
                    var request = try endpoint.urlRequest()
                    if endpoint.httpHeaderFields?[UpstreamProvider.flightHeader] != nil {
                        request.setValue(nil, forHTTPHeaderField: UpstreamProvider.flightHeader)
                    }
                    done(.success(request))
                } catch let error as MoyaError {
                    done(.failure(error))
                } catch {
                    done(.failure(.underlying(error, nil)))
                }
            },
            stubClosure: stubClosure,
            session: session,
            plugins: plugins,
            trackInflights: trackInflights,
            transportMapping: { endpoint in
                endpoint.transportRequest(omittingHeader: UpstreamProvider.flightHeader, knownOrigin: knownOrigin)
            },
            targetMapping: { multi in
                // The request the endpoint closure and the mapping above make, without the endpoint: a call that is
                // not shared (no flight header to leave out) and that no responder answers.
                guard let target = GatewayTarget.unwrapped(multi), target.flightKey == nil, !target.isStubbed,
                    target.origin == knownOrigin.prefix
                else {
                    return nil
                }
                return TransportRequest.known(
                    knownOrigin, target: target.upstreamTarget, method: target.method, headers: target.stableHeaders,
                    task: target.task)
            })
    }

    /// The stub's body as an array when `response` carries exactly its bytes (a stubbed answer), so that it is not
    /// copied out of the response's `Data` for every answer; nil otherwise. The stub's normal answer is recognised by
    /// its `HTTPURLResponse` (one identity comparison: reading a `Data`'s bytes costs three exclusivity checks); none of
    /// the gateway's plugins makes a response of its own, so a response with that object is the stub's as it was drawn.
    func stubBody(matching response: Moya.Response) -> [UInt8]? {
        if let stubNormalResponse, let stubBody, response.response === stubNormalResponse {
            return stubBody.isEmpty ? nil : stubBody
        }
        return stubBody(matching: response.data)
    }

    /// The stub's body as an array when `data` holds exactly its bytes (a stubbed answer), so that it is not copied
    /// out of the `Data` for every answer; nil otherwise.
    func stubBody(matching data: Data) -> [UInt8]? {
        guard let stubBody, !stubBody.isEmpty, stubBody.count == data.count else { return nil }
        let same = data.withUnsafeBytes { bytes in
            stubBody.withUnsafeBytes { own in
                guard let ownBase = own.baseAddress, let base = bytes.baseAddress else { return false }
                return memcmp(ownBase, base, bytes.count) == 0
            }
        }
        return same ? stubBody : nil
    }

    /// The header that carries a coalescing key into the endpoint (its identity); removed before sending.
    static let flightHeader = "X-Gateway-Flight"

    private static func sampleResponse(stub: StubSamples?, sampler: StubLatencySampler?) -> EndpointSampleResponse {
        guard let stub else { return .networkResponse(200, Data()) }
        return (sampler?.nextIsError() ?? false) ? stub.failing : stub.normal
    }
}

/// A stub upstream's two answers, built once: `HTTPURLResponse` creation (URL parsing, header dictionaries) is too
/// costly to repeat per request. Their URL is the stub's, not the request's. A class, so that the closure answering
/// each request holds one reference rather than copying both answers.
private final class StubSamples: @unchecked Sendable {
    let normal: EndpointSampleResponse
    let failing: EndpointSampleResponse
    /// The `HTTPURLResponse` of ``normal``, nil when it has none; its data is then the stub's body.
    let normalResponse: HTTPURLResponse?

    init(_ stub: StubConfig) {
        var fields: [String: String] = [:]
        for field in stub.headers { fields[field.name] = field.value }
        let url = URL(string: "http://stub.invalid/") ?? URL(fileURLWithPath: "/")
        func sample(status: Int, body: Data) -> EndpointSampleResponse {
            guard
                let response = HTTPURLResponse(
                    url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
            else {
                return .networkResponse(status, body)
            }
            return .response(response, body)
        }
        normal = sample(status: stub.status, body: Data(stub.body))
        if case .response(let response, _) = normal { normalResponse = response } else { normalResponse = nil }
        failing = sample(status: stub.errorStatus, body: Data())
    }
}
