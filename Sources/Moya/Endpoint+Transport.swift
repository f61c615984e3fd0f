import Foundation
import HTTPClient
import HTTPWire

extension Endpoint {
    /// The `TransportRequest` that `urlRequest()` describes, for tasks that need no encoding (`requestPlain`,
    /// `requestData`); nil for the others. Header fields are sent in name order, as `Session` sends a `URLRequest`'s.
    /// - Parameter omittedHeader: a field left out (any case), e.g. one that only marks the endpoint's identity.
    /// - Returns: `.failure(.requestMapping)` for a URL the transport cannot send to.
    package func transportRequest(omittingHeader omittedHeader: String? = nil) -> Result<TransportRequest, MoyaError>? {
        let body: HTTPClientRequest.Body
        switch task {
        case .requestPlain: body = .none
        case .requestData(let data): body = data.isEmpty ? .none : .bytes([UInt8](data))
        default: return nil
        }
        var headers = HTTPWire.HTTPHeaders()
        if let fields = httpHeaderFields {
            headers.reserveCapacity(fields.count + 2)
            for (name, value) in fields.sorted(by: { $0.key < $1.key })
            where omittedHeader.map({ !name.equalsIgnoringASCIICase($0) }) ?? true {
                headers.add(name: name, value: value)
            }
        }
        do {
            return .success(TransportRequest(http: try HTTPClientRequest(method: HTTPMethod(rawValue: method.rawValue), url: url,
                                                                        headers: headers, body: body)))
        } catch {
            return .failure(.requestMapping(url))
        }
    }
}
