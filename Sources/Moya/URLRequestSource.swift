import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPClient
import Synchronization

/// The `URLRequest` that plugins and responses show: one the request closure built, or one made on first use from the
/// `TransportRequest` that was sent (most callers never ask, and building it costs URL parsing and header work).
final class URLRequestSource: @unchecked Sendable {
    private enum State {
        case made(URLRequest?)
        case pending(TransportRequest)
    }

    /// An inline lock: the request is read from any thread (plugins, response consumers).
    private let state: Mutex<UncheckedSendable<State>>

    init(_ request: URLRequest?) {
        state = Mutex(UncheckedSendable(.made(request)))
    }

    init(transport request: TransportRequest) {
        state = Mutex(UncheckedSendable(.pending(request)))
    }

    var request: URLRequest? {
        let current = state.withLock { state in
            if case .pending(let transport) = state.value { state = UncheckedSendable(.made(URLRequest(transport: transport))) }
            return state
        }
        guard case .made(let request) = current.value else { return nil }
        return request
    }
}

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
