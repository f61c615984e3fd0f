import Foundation

/// The protocol used to define the specifications necessary for a `MoyaProvider`.
///
/// A target describes one API call: where it goes (``baseURL`` and ``path``), how (``method``, ``task``,
/// ``headers``), what counts as success (``validationType``), and what a stub answers (``sampleData``). Targets are
/// usually an `enum` with one case per call; `MoyaProvider<Target>` turns them into ``Endpoint``s and requests.
///
/// Target metatypes are `SendableMetatype` so the provider can use them from its callback queue and tasks.
public protocol TargetType: SendableMetatype {

    /// The target's base `URL`.
    var baseURL: URL { get }

    /// The path to be appended to `baseURL` to form the full `URL`.
    ///
    /// It is appended with `URL.appendingPathComponent(_:)`, so a `?` in it is percent-encoded: query parameters
    /// belong in ``task`` (for example `.requestParameters(parameters:encoding:)` with `URLEncoding.queryString`).
    var path: String { get }

    /// The HTTP method used in the request.
    var method: Moya.Method { get }

    /// Provides stub data for use in testing. Default is `Data()`.
    var sampleData: Data { get }

    /// The type of HTTP task to be performed.
    var task: Task { get }

    /// The type of validation to perform on the request. Default is `.none`.
    var validationType: ValidationType { get }

    /// The headers to be used in the request.
    var headers: [String: String]? { get }
}

extension TargetType {

    /// The type of validation to perform on the request. Default is `.none`.
    public var validationType: ValidationType { .none }

    /// Provides stub data for use in testing. Default is `Data()`.
    public var sampleData: Data { Data() }
}
