import Foundation

/// A `TargetType` used to enable `MoyaProvider` to process multiple `TargetType`s.
///
/// `MoyaProvider<MultiTarget>` sends targets of any type: wrap each one, as in
/// `provider.request(MultiTarget(GitHub.zen))`. Every member forwards to the wrapped target. Plugins receive the
/// `MultiTarget` itself; `AccessTokenPlugin` passes the wrapped target to its token closure.
public enum MultiTarget: TargetType {
    /// The embedded `TargetType`.
    case target(TargetType)

    /// Initializes a `MultiTarget`.
    ///
    /// - Parameter target: The target to wrap.
    public init(_ target: TargetType) {
        self = MultiTarget.target(target)
    }

    /// The path of the embedded target.
    public var path: String { target.path }

    /// The baseURL of the embedded target.
    public var baseURL: URL { target.baseURL }

    /// The HTTP method of the embedded target.
    public var method: Moya.Method { target.method }

    /// The sampleData of the embedded target.
    public var sampleData: Data { target.sampleData }

    /// The `Task` of the embedded target.
    public var task: Task { target.task }

    /// The `ValidationType` of the embedded target.
    public var validationType: ValidationType { target.validationType }

    /// The headers of the embedded target.
    public var headers: [String: String]? { target.headers }

    /// The embedded `TargetType`.
    public var target: TargetType {
        switch self {
        case .target(let target): return target
        }
    }
}

extension MultiTarget: AccessTokenAuthorizable {
    /// The authorization type of the embedded target, or nil when it is not `AccessTokenAuthorizable`.
    public var authorizationType: AuthorizationType? {
        guard let authorizableTarget = target as? AccessTokenAuthorizable else { return nil }
        return authorizableTarget.authorizationType
    }
}
