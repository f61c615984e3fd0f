import Foundation

/// A `TargetType` used to enable `MoyaProvider` to process multiple `TargetType`s.
public enum MultiTarget: TargetType {
    /// The embedded `TargetType`.
    case target(TargetType)

    // Each property reads the embedded target in place (a `switch`) rather than through `target`, which returns a
    // copy of the existential first.

    /// Initializes a `MultiTarget`.
    public init(_ target: TargetType) {
        self = MultiTarget.target(target)
    }

    /// The embedded target's base `URL`.
    public var path: String {
        switch self {
        case .target(let target): return target.path
        }
    }

    /// The baseURL of the embedded target.
    public var baseURL: URL {
        switch self {
        case .target(let target): return target.baseURL
        }
    }

    /// The HTTP method of the embedded target.
    public var method: Moya.Method {
        switch self {
        case .target(let target): return target.method
        }
    }

    /// The sampleData of the embedded target.
    public var sampleData: Data {
        switch self {
        case .target(let target): return target.sampleData
        }
    }

    /// The `Task` of the embedded target.
    public var task: Task {
        switch self {
        case .target(let target): return target.task
        }
    }

    /// The `ValidationType` of the embedded target.
    public var validationType: ValidationType {
        switch self {
        case .target(let target): return target.validationType
        }
    }

    /// The headers of the embedded target.
    public var headers: [String: String]? {
        switch self {
        case .target(let target): return target.headers
        }
    }

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
