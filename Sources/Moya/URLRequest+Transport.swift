import Foundation
import HTTPClientCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// The `URLRequest` equivalent of a transport request; nil when its URL does not parse.
    init?(transport request: TransportRequest) {
        guard let url = URL(string: request.urlString) else { return nil }
        self.init(url: url)
        if request.http.method != .get { httpMethod = request.http.method.rawValue }
        var fields: [String: String] = [:]
        for field in request.http.headers {
            fields[field.name] = fields[field.name].map { $0 + ", " + field.value } ?? field.value
        }
        allHTTPHeaderFields = fields
        if case .bytes(let bytes) = request.http.body, !bytes.isEmpty { httpBody = Data(bytes) }
        if let timeout = request.timeout {
            timeoutInterval = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        }
    }
}
