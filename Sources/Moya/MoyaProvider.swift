import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Closure to be executed when a request has completed, with the response or the error.
public typealias Completion = (_ result: Result<Moya.Response, MoyaError>) -> Void

/// Closure to be executed when progress changes, and once more with the response when the request completes.
public typealias ProgressBlock = (_ progress: ProgressResponse) -> Void

/// A type representing the progress of a request.
public struct ProgressResponse: @unchecked Sendable {

    /// The optional response of the request.
    public let response: Response?

    /// An instance of `Progress` indicating the progress of the request.
    public let progressObject: Progress?

    /// Initializes a `ProgressResponse`.
    ///
    /// - Parameters:
    ///   - progress: The transfer's progress, if known.
    ///   - response: The response, once the request has completed.
    public init(progress: Progress? = nil, response: Response? = nil) {
        self.progressObject = progress
        self.response = response
    }

    /// The fraction of the overall work completed by the progress object: 1.0 once the response is there, 0.0 while
    /// the total size is unknown (no `Content-Length`).
    public var progress: Double {
        if completed {
            return 1.0
        } else if let progressObject = progressObject, progressObject.totalUnitCount > 0 {
            // if the Content-Length is specified we can rely on `fractionCompleted`
            return progressObject.fractionCompleted
        } else {
            // if the Content-Length is not specified, return progress 0.0 until it's completed
            return 0.0
        }
    }

    /// A Boolean value stating whether the request is completed.
    public var completed: Bool { response != nil }
}

/// A protocol representing a minimal interface for a MoyaProvider.
/// Used by the reactive provider extensions.
public protocol MoyaProviderType: AnyObject {

    /// The type of target the provider sends.
    associatedtype Target: TargetType

    /// Designated request-making method. Returns a `Cancellable` token to cancel the request later.
    ///
    /// - Parameters:
    ///   - target: The target to send.
    ///   - callbackQueue: Where `progress` and `completion` run.
    ///   - progress: Called with upload or download progress.
    ///   - completion: Called once with the result.
    /// - Returns: A token that cancels the request.
    func request(
        _ target: Target, callbackQueue: DispatchQueue?, progress: Moya.ProgressBlock?,
        completion: @escaping Moya.Completion
    ) -> Cancellable
}

/// Request provider class. Requests should be made through this class only.
///
/// A provider turns each target into an ``Endpoint`` (`endpointClosure`), the endpoint into a `URLRequest`
/// (`requestClosure`), lets its plugins prepare and observe the request, and sends it through its ``Session``, or
/// answers it from the endpoint's sample response when `stubClosure` says so. Keep a reference to the provider for
/// as long as its requests run.
///
/// Thread-safe: its configuration is immutable and the in-flight table is guarded by a lock, so one provider can be
/// shared by many tasks and threads (hence `@unchecked Sendable`; the user closures it holds are called from the
/// callback queue and from the transport's tasks).
///
/// **Callback queue on Linux.** Moya delivers completions on `DispatchQueue.main` when no queue is given. In a
/// server process the main queue is only drained if the main thread runs `dispatchMain()` or a run loop, so callbacks
/// could never arrive. Here, when neither the call nor the provider names a queue (`callbackQueue: nil`):
/// * network completions and progress go to the provider's private serial queue, `defaultCallbackQueue`;
/// * `.immediate` stubs complete synchronously inside `request(...)`, as in Moya;
/// * `.delayed` stubs fire on `defaultCallbackQueue` (Moya: the main queue).
/// Pass `callbackQueue: .main` to get Moya's behaviour in an app that runs the main queue.
open class MoyaProvider<Target: TargetType>: MoyaProviderType, @unchecked Sendable {

    /// Closure that defines the endpoints for the provider.
    public typealias EndpointClosure = (Target) -> Endpoint

    /// Closure that decides if and what request should be performed.
    public typealias RequestResultClosure = (Result<URLRequest, MoyaError>) -> Void

    /// Closure that resolves an `Endpoint` into a `RequestResult`.
    public typealias RequestClosure = (Endpoint, @escaping RequestResultClosure) -> Void

    /// Closure that decides if/how a request should be stubbed.
    public typealias StubClosure = (Target) -> Moya.StubBehavior

    /// A closure responsible for mapping a `TargetType` to an `EndPoint`.
    public let endpointClosure: EndpointClosure

    /// A closure deciding if and what request should be performed.
    public let requestClosure: RequestClosure

    /// A closure responsible for determining the stubbing behavior
    /// of a request for a given `TargetType`.
    public let stubClosure: StubClosure

    /// The session requests are sent with.
    public let session: Session

    /// A list of plugins.
    /// e.g. for logging, network activity indicator or credentials.
    public let plugins: [PluginType]

    /// Whether identical in-flight requests share one network call (see `inflightRequests`).
    public let trackInflights: Bool

    /// The requests currently shared between callers, with the completions waiting for each (only with
    /// `trackInflights`). A completion sees its own entry still present; it is removed right after.
    open var inflightRequests: [Endpoint: [Moya.Completion]] { inflight.snapshot() }

    /// Propagated to Alamofire as callback queue. If nil - the Alamofire default (as of their API in 2017 - the main queue) will be used.
    let callbackQueue: DispatchQueue?

    /// The private serial queue used when no callback queue is given (see the class documentation): network
    /// completions, progress and delayed stubs run there.
    public let defaultCallbackQueue: DispatchQueue

    let inflight = InflightRegistry()

    /// The plugins that are `RequestRetrier`s, in order, each with its transport form looked up once (a protocol cast
    /// per attempt is a conformance lookup).
    let retriers: [RetrierPlugin]

    /// The plugins that are `RequestAdapter`s, in order, each with its transport form looked up once.
    let adapters: [AdapterPlugin]

    /// How `requestInCurrentTask` sends without `URLRequest`; nil sends as `request` does.
    ///
    /// Written once, by the convenience initializer that makes the lane, before the provider can be shared; only read
    /// after that. So no access can overlap, and the dynamic exclusivity check every read of a class's `var` pays
    /// (twice per request) is left out.
    @exclusivity(unchecked) package private(set) var transportLane: TransportLane?

    /// Whether the provider has a ``transportLane``, read in place (reading the lane from another module copies it).
    package var hasTransportLane: Bool { transportLane != nil }

    /// Maps a target straight to the `TransportRequest` the lane's mapping would make of its endpoint, for the on-loop
    /// lane (`request(onLoop:)`): no `Endpoint` is made for a request it maps. nil for a target it leaves to the
    /// endpoint. Only for an endpoint closure with no effect of its own. Written once, as ``transportLane``.
    @exclusivity(unchecked) package private(set) var targetMapping: ((Target) -> TransportRequest?)?

    /// Initializes a provider.
    ///
    /// - Parameters:
    ///   - endpointClosure: Maps a target to its ``Endpoint``; ``defaultEndpointMapping(for:)`` by default.
    ///   - requestClosure: Turns the endpoint into a `URLRequest`, or fails it; ``defaultRequestMapping(for:closure:)``
    ///     by default.
    ///   - stubClosure: Decides whether and how a target is stubbed; ``neverStub(_:)`` by default.
    ///   - callbackQueue: Where completions and progress run when a request names no queue; `nil` means
    ///     ``defaultCallbackQueue`` (see the class documentation).
    ///   - session: The session requests are sent with; ``defaultAlamofireSession()`` by default.
    ///   - plugins: Plugins called for every request, in order.
    ///   - trackInflights: Whether identical requests in flight share one network call.
    public init(
        endpointClosure: @escaping EndpointClosure = MoyaProvider.defaultEndpointMapping,
        requestClosure: @escaping RequestClosure = MoyaProvider.defaultRequestMapping,
        stubClosure: @escaping StubClosure = MoyaProvider.neverStub,
        callbackQueue: DispatchQueue? = nil,
        session: Session = MoyaProvider<Target>.defaultAlamofireSession(),
        plugins: [PluginType] = [],
        trackInflights: Bool = false
    ) {

        self.endpointClosure = endpointClosure
        self.requestClosure = requestClosure
        self.stubClosure = stubClosure
        self.session = session
        self.plugins = plugins
        self.trackInflights = trackInflights
        self.callbackQueue = callbackQueue
        self.defaultCallbackQueue = DispatchQueue(label: "Moya.MoyaProvider<\(Target.self)>.callbackQueue")
        self.retriers = plugins.compactMap { plugin in
            (plugin as? RequestRetrier).map { RetrierPlugin(retrier: $0, transport: $0 as? TransportRetrier) }
        }
        self.adapters = plugins.compactMap { plugin in
            (plugin as? RequestAdapter).map { AdapterPlugin(adapter: $0, transport: $0 as? TransportAdapter) }
        }
    }

    /// A provider whose `requestInCurrentTask` builds `TransportRequest`s with `transportMapping` instead of running
    /// `requestClosure` (which must then make the same request) and sends them without a `URLRequest`, when every
    /// plugin is a `TransportPlugin`, every retrier a `TransportRetrier`, and the session does not follow redirects.
    /// Otherwise, and for endpoints the mapping returns nil for, it sends as `request` does.
    /// `targetMapping`: see ``targetMapping``.
    package convenience init(
        endpointClosure: @escaping EndpointClosure, requestClosure: @escaping RequestClosure,
        stubClosure: @escaping StubClosure, session: Session, plugins: [PluginType],
        trackInflights: Bool, transportMapping: @escaping TransportLane.Mapping,
        targetMapping: ((Target) -> TransportRequest?)? = nil
    ) {
        self.init(
            endpointClosure: endpointClosure, requestClosure: requestClosure, stubClosure: stubClosure,
            session: session, plugins: plugins, trackInflights: trackInflights)
        transportLane = TransportLane(mapping: transportMapping, plugins: plugins, session: session)
        self.targetMapping = targetMapping
    }

    /// Returns an `Endpoint` based on the token, method, and parameters by invoking the `endpointClosure`.
    ///
    /// - Parameter token: The target to map.
    /// - Returns: The endpoint `endpointClosure` makes of it.
    open func endpoint(_ token: Target) -> Endpoint {
        endpointClosure(token)
    }

    /// Designated request-making method. Returns a `Cancellable` token to cancel the request later.
    ///
    /// - Parameters:
    ///   - target: The target to send.
    ///   - callbackQueue: where `completion` and `progress` run; `nil` falls back to the provider's queue, then to
    ///     `defaultCallbackQueue` (immediate stubs: synchronously). See the class documentation.
    ///   - progress: called with upload or download progress, and once more with the response.
    ///   - completion: called exactly once, also when the request is cancelled.
    /// - Returns: A token that cancels the request.
    @discardableResult
    open func request(
        _ target: Target,
        callbackQueue: DispatchQueue? = .none,
        progress: ProgressBlock? = .none,
        completion: @escaping Completion
    ) -> Cancellable {

        let callbackQueue = callbackQueue ?? self.callbackQueue
        return requestNormal(target, callbackQueue: callbackQueue, progress: progress, completion: completion)
    }

    /// Answers a request from its endpoint's sample response, at once or after a delay.
    ///
    /// When overriding this method, call `notifyPluginsOfImpendingStub` to prepare your request
    /// and then use the returned `URLRequest` in the `createStubFunction` method.
    /// Note: this was previously in an extension, however it must be in the original class declaration to allow subclasses to override.
    ///
    /// - Parameters:
    ///   - target: The target being stubbed.
    ///   - request: The request the request closure built (before the plugins' `prepare`).
    ///   - callbackQueue: Where the completion runs; an `.immediate` stub with no queue completes synchronously.
    ///   - completion: Called once with the stubbed result (or the cancellation error).
    ///   - endpoint: The endpoint whose `sampleResponseClosure` answers.
    ///   - stubBehavior: `.immediate` or `.delayed(seconds:)`; `.never` fails the request with
    ///     `MoyaRequestError.stubBehaviorNever`.
    /// - Returns: A token that cancels the stub.
    @discardableResult
    open func stubRequest(
        _ target: Target, request: URLRequest, callbackQueue: DispatchQueue?, completion: @escaping Moya.Completion,
        endpoint: Endpoint, stubBehavior: Moya.StubBehavior
    ) -> CancellableToken {
        let callbackQueue = callbackQueue ?? self.callbackQueue
        let cancellableToken = CancellableToken {}
        let preparedRequest = notifyPluginsOfImpendingStub(for: request, target: target)
        let plugins = self.plugins
        let stub: () -> Void = createStubFunction(
            cancellableToken, forTarget: target, withCompletion: completion, endpoint: endpoint, plugins: plugins,
            request: preparedRequest)
        let once = OnceAction(stub)
        switch stubBehavior {
        case .immediate:
            switch callbackQueue {
            case .none:
                once.run()
            case .some(let callbackQueue):
                callbackQueue.async { once.run() }
            }
        case .delayed(let delay):
            let queue = callbackQueue ?? defaultCallbackQueue
            queue.asyncAfter(deadline: .now() + max(delay, 0)) { once.run() }
            // Cancelling a delayed stub completes it right away (with the cancellation error) instead of at the
            // deadline.
            return CancellableToken {
                cancellableToken.cancel()
                queue.async { once.run() }
            }
        case .never:
            // Moya calls fatalError; report it instead.
            let error = MoyaError.underlying(MoyaRequestError.stubBehaviorNever, nil)
            plugins.forEach { $0.didReceive(.failure(error), target: target) }
            completion(.failure(error))
        }
        return cancellableToken
    }
}

// MARK: Stubbing

/// Controls how stub responses are returned.
public enum StubBehavior {

    /// Do not stub.
    case never

    /// Return a response immediately.
    case immediate

    /// Return a response after a delay.
    case delayed(seconds: TimeInterval)
}

extension MoyaProvider {

    // Swift won't let us put the StubBehavior enum inside the provider class, so we'll
    // at least add some class functions to allow easy access to common stubbing closures.

    /// Do not stub.
    ///
    /// - Returns: `.never`.
    public final class func neverStub(_: Target) -> Moya.StubBehavior { .never }

    /// Return a response immediately.
    ///
    /// - Returns: `.immediate`.
    public final class func immediatelyStub(_: Target) -> Moya.StubBehavior { .immediate }

    /// Return a response after a delay.
    ///
    /// - Parameter seconds: The delay.
    /// - Returns: A stub closure answering `.delayed(seconds: seconds)` for every target.
    public final class func delayedStub(_ seconds: TimeInterval) -> (Target) -> Moya.StubBehavior {
        { _ in .delayed(seconds: seconds) }
    }
}

/// A public function responsible for converting the result of a `URLRequest` to a Result<Moya.Response, MoyaError>.
///
/// - Parameters:
///   - response: The HTTP response, if one arrived.
///   - request: The request that was sent.
///   - data: The response body.
///   - error: The error the request failed with, if any.
/// - Returns: `.success` with a ``Response`` when there is a response and no error; otherwise
///   `.failure(.underlying(error, response))`, with `NSURLErrorUnknown` when there is neither.
public func convertResponseToResult(
    _ response: HTTPURLResponse?, request: URLRequest?, data: Data?, error: Swift.Error?
) -> Result<Moya.Response, MoyaError> {
    switch (response, data, error) {
    case (.some(let response), let data, .none):
        let response = Moya.Response(
            statusCode: response.statusCode, data: data ?? Data(), request: request, response: response)
        return .success(response)
    case (.some(let response), _, .some(let error)):
        let response = Moya.Response(
            statusCode: response.statusCode, data: data ?? Data(), request: request, response: response)
        let error = MoyaError.underlying(error, response)
        return .failure(error)
    case (_, _, .some(let error)):
        let error = MoyaError.underlying(error, nil)
        return .failure(error)
    default:
        let error = MoyaError.underlying(NSError(domain: NSURLErrorDomain, code: NSURLErrorUnknown, userInfo: nil), nil)
        return .failure(error)
    }
}

/// Runs an action at most once, whichever caller gets there first.
final class OnceAction: @unchecked Sendable {
    private let lock = NSLock()
    private var action: (() -> Void)?

    init(_ action: @escaping () -> Void) { self.action = action }

    func run() {
        let action: (() -> Void)? = lock.withLock {
            defer { self.action = nil }
            return self.action
        }
        action?()
    }
}
