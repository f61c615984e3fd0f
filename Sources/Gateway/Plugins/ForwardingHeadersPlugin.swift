import Foundation
import HTTPWire
import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Adds the per-caller headers (request id, `X-Forwarded-*`, `Via`, and for a request that is not shared every
/// forwarded header) to the outgoing request. Runs in `prepare`, after the in-flight check, so those headers never
/// split a coalesced flight, and a request sent alone gets its headers as one list, without a dictionary. Also applies
/// the route's timeout, hands a relayed client body (``UpstreamRequestBody``) or a WebSocket's client side
/// (``WebSocketTunnel``) to the upstream request, and marks the
/// target as sent (``GatewayTarget/wasSent``): only the target of a flight's shared call gets here.
struct ForwardingHeadersPlugin: PreparingTransportPlugin {
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        guard let gateway = GatewayTarget.unwrapped(target) else { return request }
        gateway.markSent()
        guard !gateway.perRequestHeaders.isEmpty || gateway.timeout != nil else { return request }
        var request = request
        if !gateway.perRequestHeaders.isEmpty {
            // One bulk set: `URLRequest.setValue` per field normalises and searches every name each time.
            var fields = request.allHTTPHeaderFields ?? [:]
            ProxyHeaders.merge(gateway.perRequestHeaders, into: &fields)
            request.allHTTPHeaderFields = fields
        }
        if let timeout = gateway.timeout {
            request.timeoutInterval = timeout.seconds
        }
        return request
    }

    func prepare(_ request: inout TransportRequest, target: TargetType) {
        guard let gateway = GatewayTarget.unwrapped(target) else { return }
        gateway.markSent()
        if !gateway.perRequestHeaders.isEmpty { request.http.headers.replaceOrAdd(gateway.perRequestHeaders) }
        request.http.callerKey = gateway.callerKey
        if let timeout = gateway.timeout {
            request.timeout = timeout
            request.deadline = gateway.deadline
        }
        if let streamed = gateway.streamedBody {
            request.http.body = .stream(streamed.makeStream(), length: streamed.declaredLength)
        }
        if let tunnel = gateway.tunnel {
            request.http.body = .upgrade(tunnel.makeStream(), idleTimeout: tunnel.idleTimeout)
        }
    }
}
