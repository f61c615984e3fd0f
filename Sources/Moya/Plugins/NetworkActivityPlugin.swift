import Foundation

/// Network activity change notification type.
public enum NetworkActivityChangeType: Sendable {
    /// A request is about to be sent (or stubbed).
    case began
    /// A request has completed, failed or been cancelled.
    case ended
}

/// Notify a request's network activity changes (request begins or ends).
public final class NetworkActivityPlugin: PluginType {

    /// A closure told of each change, with the request's target.
    public typealias NetworkActivityClosure = (_ change: NetworkActivityChangeType, _ target: TargetType) -> Void
    let networkActivityClosure: NetworkActivityClosure

    /// Initializes a NetworkActivityPlugin.
    ///
    /// - Parameter networkActivityClosure: Called with `.began` and `.ended` for every request.
    public init(networkActivityClosure: @escaping NetworkActivityClosure) {
        self.networkActivityClosure = networkActivityClosure
    }

    // MARK: Plugin

    /// Called by the provider as soon as the request is about to start
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - target: The request's target.
    public func willSend(_ request: RequestType, target: TargetType) {
        networkActivityClosure(.began, target)
    }

    /// Called by the provider as soon as a response arrives, even if the request is canceled.
    ///
    /// - Parameters:
    ///   - result: The request's result.
    ///   - target: The request's target.
    public func didReceive(_ result: Result<Moya.Response, MoyaError>, target: TargetType) {
        networkActivityClosure(.ended, target)
    }
}
