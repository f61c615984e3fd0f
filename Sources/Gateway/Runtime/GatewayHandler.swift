import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPClient
import HTTPServer
import HTTPWire
import Moya
import NetCore
import Synchronization

/// The gateway's request handler: route, authorise the caller, send the call through the upstream's Moya provider
/// (stubs, plugins, coalescing) and map the result to a response, with one access-log line per request.
final class GatewayHandler: HTTPServerHandler {
    private let state: GatewayStateBox
    private let flights = FlightTracker()
    private let requestIDs = RequestIDGenerator()

    init(state: GatewayStateBox) {
        self.state = state
    }

    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let snapshot = state.current
        let started = ContinuousClock.now
        let head = request.head
        let requestID = RequestID.take(from: head.headers.first(name: "X-Request-Id"), generator: requestIDs)
        var record = AccessRecord(requestID: requestID, method: head.method.rawValue, path: head.target,
                                  bytesIn: Int(request.declaredBodyLength ?? 0))
        let response = await respond(to: request, snapshot: snapshot, requestID: requestID, record: &record)
        record.status = response.head.status
        if case .bytes(let body) = response.body { record.bytesOut = body.count }
        record.duration = ContinuousClock.now - started
        snapshot.telemetry.record(record)
        return response
    }

    private func respond(to request: HTTPServerRequest, snapshot: GatewaySnapshot, requestID: String,
                         record: inout AccessRecord) async -> HTTPServerResponse {
        let head = request.head
        if head.method == .trace || head.method == .connect {
            return errorResponse(.methodNotAllowed, requestID: requestID, extra: ["Allow": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"])
        }
        let route: CompiledRoute
        let upstreamPath: String
        switch snapshot.routes.route(head) {
        case .notFound:
            return errorResponse(.notFound, requestID: requestID)
        case .methodNotAllowed(let allow):
            return errorResponse(.methodNotAllowed, requestID: requestID, extra: ["Allow": allow.joined(separator: ", ")])
        case .badRequest:
            return errorResponse(.badRequest, requestID: requestID)
        case .matched(let matched, let path, _):
            route = matched
            upstreamPath = path
        }
        record.route = route.name
        record.upstream = route.upstream.name
        record.upstreamPath = upstreamPath
        record.stubbed = route.upstream.isStub

        // Caller identity: API keys.
        var clientName: String?
        let apiKeys = snapshot.config.clients?.apiKeys
        if let apiKeys {
            guard let key = head.headers.first(name: apiKeys.header), let client = apiKeys.client(forKey: key) else {
                return errorResponse(.unauthorized, requestID: requestID)
            }
            clientName = client.name
        }
        if let allowed = route.config.clients, !allowed.contains(clientName ?? "") {
            return errorResponse(clientName == nil ? .unauthorized : .forbidden, requestID: requestID)
        }

        guard let upstream = snapshot.providers[route.upstream.name] else {
            return errorResponse(.badGateway, requestID: requestID)
        }
        let coalescing = route.config.coalesce && CoalescingKey.isCoalescible(head.method)
        let maxBodyBytes = Int(clamping: snapshot.config.server.limits.maxBodyBytes)
        // A long or open-ended body goes upstream as it arrives when the call is sent alone on the transport lane
        // (a shared call's body is part of its identity; a stub reads none).
        let streamedBody = coalescing || upstream.client == nil || upstream.provider.transportLane == nil
            ? nil : UpstreamRequestBody.relaying(request, limit: maxBodyBytes)
        var body: [UInt8] = []
        if streamedBody == nil {
            do {
                body = try await request.body.collect(upTo: maxBodyBytes)
            } catch ByteStreamError.tooLarge {
                return errorResponse(.payloadTooLarge, requestID: requestID)
            } catch {
                return errorResponse(.badRequest, requestID: requestID)
            }
            record.bytesIn = body.count
        }

        let key = coalescing ? CoalescingKey.make(method: head.method, upstream: route.upstream.name,
                                                  upstreamURL: upstream.origin + upstreamPath,
                                                  varyHeaders: route.config.coalesceVary, requestHeaders: head.headers,
                                                  clientName: clientName) : nil
        var (stable, perRequest) = ProxyHeaders.upstreamHeaders(
            from: head.headers, apiKeyHeader: apiKeys?.header, upstream: route.upstream,
            varyHeaders: route.config.coalesceVary, coalescing: key != nil)
        let forwarding = ProxyHeaders.forwarding(client: head.headers, peer: request.remoteAddress?.host,
                                                 isTLS: request.isTLS, requestID: requestID, version: head.version)
        if key == nil {
            // Nothing to share: the per-caller headers go into the endpoint, set in bulk with the others (adding
            // them one by one to the `URLRequest` in a plugin costs more).
            ProxyHeaders.merge(forwarding, into: &stable)
        } else {
            perRequest += forwarding
        }
        let target = GatewayTarget(
            upstream: route.upstream, origin: upstream.origin, upstreamTarget: upstreamPath, method: head.method,
            body: Data(body), streamedBody: streamedBody, stableHeaders: stable, perRequestHeaders: perRequest,
            flightKey: key.map { "\($0.hashValue)-\($0.identity)" }, timeout: route.config.timeout,
            retries: route.config.retries)

        let result: Result<Moya.Response, MoyaError>
        if let key {
            record.coalesced = flights.join(key) ? "leader" : "follower"
            result = await send(MultiTarget(target), through: upstream.provider)
            flights.leave(key)
        } else {
            // Not shareable: sent in this task, on this event loop, without Moya's callback queue; a long body is
            // relayed to the client as it arrives instead of being collected.
            result = await upstream.provider.requestInCurrentTask(MultiTarget(target),
                                                                  streamingBodiesAbove: StreamedBodyRelay.collectLimit)
        }
        record.retries = target.retryCount.value
        if let streamedBody {
            record.bytesIn = streamedBody.bytesRelayed
            if case .failure = result, streamedBody.exceededLimit {
                return errorResponse(.payloadTooLarge, requestID: requestID)
            }
        }
        let timings = (try? result.get())?.timings ?? result.failureResponse?.timings
        record.upstreamConnect = timings?.connect
        record.upstreamFirstByte = timings?.firstByte

        switch result {
        case .success(let response):
            let headers: HTTPWire.HTTPHeaders
            if let transport = response.transportHeaders {
                headers = ProxyHeaders.downstream(from: transport, requestID: requestID)
            } else if let stubHeaders = upstream.stubHeaders {
                headers = ProxyHeaders.downstream(from: stubHeaders, requestID: requestID)
            } else {
                headers = ProxyHeaders.downstream(from: response.response?.allHeaderFields ?? [:], requestID: requestID)
            }
            let head = HTTPResponseHead(status: response.statusCode, headers: headers)
            if let streamed = response.streamedBody {
                record.bytesOut = streamed.headers.first(name: "Content-Length").flatMap { Int($0) } ?? 0
                return HTTPServerResponse(head: head, body: .stream(StreamedBodyRelay.relay(streamed)))
            }
            return HTTPServerResponse(head: head, body: .bytes(Array(response.data)))
        case .failure(let error):
            let code = GatewayErrorMapping.code(for: error)
            record.upstreamError = GatewayErrorMapping.reason(for: error)
            snapshot.telemetry.upstreamError(upstream: route.upstream.name, code: code)
            return errorResponse(code, requestID: requestID)
        }
    }

    private func send(_ target: MultiTarget, through provider: MoyaProvider<MultiTarget>) async -> Result<Moya.Response, MoyaError> {
        let cancellable = Mutex<UncheckedSendable<any Cancellable>?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let token = provider.request(target, callbackQueue: nil, progress: nil) { result in
                    continuation.resume(returning: result)
                }
                cancellable.withLock { $0 = UncheckedSendable(token) }
            }
        } onCancel: {
            cancellable.withLock { $0 }?.value.cancel()
        }
    }

    private func errorResponse(_ code: GatewayErrorCode, requestID: String, extra: [String: String] = [:]) -> HTTPServerResponse {
        var headers: HTTPWire.HTTPHeaders = ["Content-Type": ErrorBody.contentType, "X-Request-Id": requestID]
        for (name, value) in extra { headers.add(name: name, value: value) }
        return HTTPServerResponse(status: code.status, headers: headers, body: ErrorBody.bytes(code, requestID: requestID))
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
            if let moya = underlying as? MoyaError { return reason(for: moya) }
            return String(describing: type(of: underlying))
        }
        if case .statusCode(let response) = error { return "status \(response.statusCode) failed validation" }
        return error.errorDescription ?? "\(error)"
    }

    static func code(forUnderlying error: any Error) -> GatewayErrorCode {
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .responseTimeout: return .gatewayTimeout
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
