import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPClient
import Moya
import NetCore

/// The `MoyaProvider<MultiTarget>` for one upstream: its HTTP client (pool, timeouts, TLS), stubs, and the
/// access-token, credentials and forwarding plugins. Coalescing uses the provider's `trackInflights`.
final class UpstreamProvider: Sendable {
    let upstream: UpstreamConfig
    let provider: MoyaProvider<MultiTarget>
    let client: HTTPClient?
    private let latency: StubLatencySampler?

    init(upstream: UpstreamConfig, group: EventLoopGroup) {
        self.upstream = upstream
        var plugins: [PluginType] = [ForwardingHeadersPlugin(), RouteRetryPlugin()]
        if let token = upstream.accessToken {
            plugins.append(AccessTokenPlugin { _ in token.token.value })
        }
        if let credentials = upstream.credentials {
            let credential = URLCredential(user: credentials.user, password: credentials.password.value, persistence: .none)
            plugins.append(CredentialsPlugin(preemptive: credentials.preemptive) { _ in credential })
        }
        let session: Session
        if upstream.isStub {
            client = nil
            session = Session(client: Session.sharedClient, headers: [:], startRequestsImmediately: false, redirectHandler: .doNotFollow)
        } else {
            var configuration = HTTPClient.Configuration()
            configuration.connectTimeout = upstream.timeout.connect
            configuration.responseTimeout = upstream.timeout.response
            configuration.maxConnectionsPerOrigin = upstream.pool.maxConnections
            configuration.http2 = HTTPClient.Configuration.HTTP2Mode(rawValue: upstream.pool.http2.rawValue) ?? .auto
            configuration.tls = TLSClientConfiguration(verifyPeer: upstream.tls.verify, caFile: upstream.tls.caFile)
            let client = HTTPClient(configuration: configuration, group: group)
            self.client = client
            session = Session(client: client, headers: [:], startRequestsImmediately: false, redirectHandler: .doNotFollow)
        }
        let stub = upstream.stub
        let sampler = stub.map { StubLatencySampler(stub: $0) }
        self.latency = sampler
        provider = MoyaProvider<MultiTarget>(
            endpointClosure: { multi in
                guard let target = multi.gatewayTarget else { return MoyaProvider.defaultEndpointMapping(for: multi) }
                var headers = target.stableHeaders
                headers["X-Gateway-Flight"] = target.flightKey
                return Endpoint(url: target.urlString,
                                sampleResponseClosure: { UpstreamProvider.sampleResponse(stub: stub, sampler: sampler, url: target.urlString) },
                                method: target.method, task: target.task, httpHeaderFields: headers)
            },
            requestClosure: { endpoint, done in
                do {
                    var request = try endpoint.urlRequest()
                    request.setValue(nil, forHTTPHeaderField: "X-Gateway-Flight")
                    done(.success(request))
                } catch let error as MoyaError {
                    done(.failure(error))
                } catch {
                    done(.failure(.underlying(error, nil)))
                }
            },
            stubClosure: { _ in
                guard stub != nil, let sampler else { return .never }
                let delay = sampler.nextDelay()
                return delay <= 0 ? .immediate : .delayed(seconds: delay)
            },
            session: session,
            plugins: plugins,
            trackInflights: true)
    }

    private static func sampleResponse(stub: StubConfig?, sampler: StubLatencySampler?, url: String) -> EndpointSampleResponse {
        guard let stub, let address = URL(string: url) else { return .networkResponse(200, Data()) }
        let failing = sampler?.nextIsError() ?? false
        let status = failing ? stub.errorStatus : stub.status
        var fields: [String: String] = [:]
        for field in stub.headers { fields[field.name] = field.value }
        let response = HTTPURLResponse(url: address, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
        guard let response else { return .networkResponse(status, Data(stub.body)) }
        return .response(response, failing ? Data() : Data(stub.body))
    }
}
