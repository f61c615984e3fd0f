import HTTPClientCore
import HTTPWire

/// A request as Moya's transport sends it: the HTTP client's request and the whole-exchange timeout that a
/// `URLRequest` carries as `timeoutInterval`.
///
/// A provider with a transport mapping (see `MoyaProvider.init(…transportMapping:)`) runs its pipeline on this type and
/// builds a `URLRequest` only when a plugin or a caller reads one (`RequestType.request`, `Response.request`).
package struct TransportRequest: Sendable {
    package var http: HTTPClientRequest
    /// Bounds the whole exchange; `nil` waits as long as the client's own timeouts allow.
    package var timeout: Duration?
    /// The instant by which the whole request must be done, retries and challenge answers included: each exchange is
    /// bounded by the earlier of this and its `timeout`.
    package var deadline: ContinuousClock.Instant?

    /// `URLRequest`'s default `timeoutInterval`.
    package static let defaultTimeout: Duration = .seconds(60)

    package init(http: HTTPClientRequest, timeout: Duration? = TransportRequest.defaultTimeout) {
        self.http = http
        self.timeout = timeout
    }

    /// The absolute URL, as a `URLRequest` would hold it.
    var urlString: String { http.origin.description + http.target }
}

/// A plugin whose `prepare` has the same effect on a `TransportRequest`, and whose other hooks work without a
/// `URLRequest` (reading `RequestType.request` or `Response.request` still works: it is built on first use).
package protocol TransportPlugin: PluginType {
    func prepare(_ request: inout TransportRequest, target: TargetType)
}

/// A transport plugin that only prepares requests: it keeps `PluginType`'s own `willSend`, `didReceive` and `process`
/// (it reads neither the request as sent nor the result, and changes neither). A provider whose plugins all are has
/// nobody to show a `Response` to, so its on-loop lane can hand the client's response over as it came (see
/// `MoyaLoopCompletion.acceptsClientResponses`).
package protocol PreparingTransportPlugin: TransportPlugin {}

/// A `RequestRetrier` that decides from a `TransportRequest`.
package protocol TransportRetrier: RequestRetrier {
    func retry(
        _ request: TransportRequest, for target: TargetType, dueTo result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision
}
