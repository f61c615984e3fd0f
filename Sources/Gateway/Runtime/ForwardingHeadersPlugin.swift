import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Moya

/// Adds the per-caller headers (request id, `X-Forwarded-*`, `Via`) of a coalescible request to the outgoing request.
/// Runs in `prepare`, after the in-flight check, so those headers never split a coalesced flight. (Requests that are
/// not shared carry them in their endpoint.) Also applies the route's timeout.
struct ForwardingHeadersPlugin: PluginType {
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        guard let gateway = target.gatewayTarget else { return request }
        guard !gateway.perRequestHeaders.isEmpty || gateway.timeout != nil else { return request }
        var request = request
        if !gateway.perRequestHeaders.isEmpty {
            // One bulk set: `URLRequest.setValue` per field normalises and searches every name each time.
            var fields = request.allHTTPHeaderFields ?? [:]
            ProxyHeaders.merge(gateway.perRequestHeaders, into: &fields)
            request.allHTTPHeaderFields = fields
        }
        if let timeout = gateway.timeout {
            request.timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        }
        return request
    }
}
