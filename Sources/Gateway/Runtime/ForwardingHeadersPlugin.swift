import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Moya

/// Adds the per-caller headers (request id, `X-Forwarded-*`, `Via`) to the outgoing request. Runs in `prepare`, after
/// the in-flight check, so those headers never split a coalesced flight.
struct ForwardingHeadersPlugin: PluginType {
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        guard let gateway = target.gatewayTarget else { return request }
        var request = request
        for (name, value) in gateway.perRequestHeaders { request.setValue(value, forHTTPHeaderField: name) }
        if let timeout = gateway.timeout {
            request.timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        }
        return request
    }
}
