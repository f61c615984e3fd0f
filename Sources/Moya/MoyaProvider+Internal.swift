import Foundation
import HTTPClientCore
import Locking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Method

extension MoyaProvider {

    /// Performs normal requests: endpoint, stub behaviour, in-flight sharing, request closure, then the network or
    /// the stub. The completion (after the plugins' `process`) is called exactly once.
    ///
    /// - Parameters:
    ///   - target: The target to send.
    ///   - callbackQueue: Where `progress` and `completion` run (see `request(_:callbackQueue:progress:completion:)`).
    ///   - progress: Called with upload or download progress.
    ///   - completion: Called once with the result.
    /// - Returns: A token that cancels the request.
    public func requestNormal(
        _ target: Target, callbackQueue: DispatchQueue?, progress: Moya.ProgressBlock?,
        completion: @escaping Moya.Completion
    ) -> Cancellable {
        let endpoint = self.endpoint(target)
        let stubBehavior = self.stubClosure(target)
        let plugins = self.plugins

        // Allow plugins to modify result
        let pluginsWithCompletion: Moya.Completion = { result in
            let processedResult = plugins.reduce(result) { $1.process($0, target: target) }
            completion(processedResult)
        }

        let call: InflightCall
        let waiterToken: Cancellable
        if trackInflights {
            let joined = inflight.join(
                identity: EndpointIdentity(endpoint), endpoint: endpoint,
                completion: pluginsWithCompletion, queue: callbackQueue,
                defaultQueue: defaultCallbackQueue)
            if joined.isDuplicate { return joined.token }
            call = joined.call
            waiterToken = joined.token
        } else {
            call = InflightCall(endpoint: endpoint, identity: nil, defaultQueue: defaultCallbackQueue)
            waiterToken = call.addWaiter(pluginsWithCompletion, queue: callbackQueue) ?? SimpleCancellable()
        }

        let cancellableToken = call.operation
        let inflight = self.inflight
        let networkCompletion: Moya.Completion = { result in
            call.finish(result)
            inflight.remove(call)
        }

        let performNetworking = { (requestResult: Result<URLRequest, MoyaError>) in
            if cancellableToken.isCancelled {
                self.cancelCompletion(networkCompletion, target: target)
                return
            }

            let request: URLRequest
            switch requestResult {
            case .success(let urlRequest):
                request = urlRequest
            case .failure(let error):
                // As in Moya, neither willSend nor didReceive run when the request cannot be built.
                networkCompletion(.failure(error))
                return
            }

            cancellableToken.innerCancellable = self.performRequest(
                target, request: request, callbackQueue: callbackQueue, progress: progress,
                completion: networkCompletion, endpoint: endpoint, stubBehavior: stubBehavior)
        }

        requestClosure(endpoint, performNetworking)

        return waiterToken
    }

    /// Completes with the cancellation error (`NSURLErrorCancelled`, -999) after notifying the plugins.
    ///
    /// - Parameters:
    ///   - completion: Called with `.failure(.underlying(NSError(domain: NSURLErrorDomain, code: -999), nil))`.
    ///   - target: The cancelled request's target, passed to the plugins' `didReceive`.
    public func cancelCompletion(_ completion: Moya.Completion, target: Target) {
        let error = MoyaError.underlying(MoyaProviderErrors.cancelled, nil)
        plugins.forEach { $0.didReceive(.failure(error), target: target) }
        completion(.failure(error))
    }

    /// Creates a function which, when called, executes the appropriate stubbing behavior for the given parameters.
    ///
    /// - Parameters:
    ///   - token: The stub's token: when it is cancelled the function completes with the cancellation error.
    ///   - target: The target being stubbed.
    ///   - completion: Called with the result.
    ///   - endpoint: The endpoint whose `sampleResponseClosure` answers.
    ///   - plugins: The plugins whose `didReceive` sees the result.
    ///   - request: The prepared request, which becomes the response's `request`.
    /// - Returns: The function that runs the stub.
    public final func createStubFunction(
        _ token: CancellableToken, forTarget target: Target, withCompletion completion: @escaping Moya.Completion,
        endpoint: Endpoint, plugins: [PluginType], request: URLRequest
    ) -> (() -> Void) {
        {
            if token.isCancelled {
                self.cancelCompletion(completion, target: target)
                return
            }
            completion(self.stubResult(target, endpoint: endpoint, plugins: plugins, request: request))
        }
    }

    /// The stubbed result (the sample response, validated), after the plugins' `didReceive`.
    internal func stubResult(_ target: Target, endpoint: Endpoint, plugins: [PluginType], request: URLRequest)
        -> Result<Moya.Response, MoyaError>
    {
        stubResult(
            target, pluginTarget: target, endpoint: endpoint, plugins: plugins,
            requestSource: RequestTypeWrapper(request: request))
    }

    /// `pluginTarget`: `target` as the plugins get it (see `requestInCurrentTask`).
    internal func stubResult(
        _ target: Target, pluginTarget: TargetType, endpoint: Endpoint, plugins: [PluginType],
        requestSource: RequestTypeWrapper
    ) -> Result<Moya.Response, MoyaError> {
        let result: Result<Moya.Response, MoyaError>
        switch endpoint.sampleResponseClosure() {
        case .networkResponse(let statusCode, let data):
            result = validated(
                .success(
                    Moya.Response(
                        statusCode: statusCode, data: data, requestSource: requestSource,
                        response: nil)), target: target)
        case .response(let customResponse, let data):
            result = validated(
                .success(
                    Moya.Response(
                        statusCode: customResponse.statusCode, data: data,
                        requestSource: requestSource, response: customResponse)), target: target)
        case .networkError(let error):
            result = .failure(MoyaError.underlying(error, nil))
        }
        plugins.forEach { $0.didReceive(result, target: pluginTarget) }
        return result
    }

    /// Notify all plugins that a stub is about to be performed. You must call this if overriding `stubRequest`.
    ///
    /// - Parameters:
    ///   - request: The request the request closure built.
    ///   - target: The target being stubbed.
    /// - Returns: The request after every plugin's `prepare`, as their `willSend` saw it.
    public final func notifyPluginsOfImpendingStub(for request: URLRequest, target: Target) -> URLRequest {
        let preparedRequest = plugins.reduce(request) { $1.prepare($0, target: target) }
        let stubbedRequest = RequestTypeWrapper(request: preparedRequest, sessionHeaders: session.headers)
        plugins.forEach { $0.willSend(stubbedRequest, target: target) }
        return preparedRequest
    }
}

/// What the transport needs to know about a task: the upload body, the download destination.
struct TransferPlan {
    var upload: Session.Upload = .requestBody
    var destination: DownloadDestination?
    /// Stream response bodies longer than this (or of unknown length) instead of collecting them; `nil` collects.
    var streamingBodiesAbove: Int?
}

/// Errors the provider reports.
enum MoyaProviderErrors {
    /// `NSError(domain: NSURLErrorDomain, code: NSURLErrorCancelled)`, what Moya reports for a cancelled request.
    static var cancelled: NSError { NSError(domain: NSURLErrorDomain, code: NSURLErrorCancelled, userInfo: nil) }
}

// MARK: - Network

extension MoyaProvider {

    private func performRequest(
        _ target: Target, request: URLRequest, callbackQueue: DispatchQueue?, progress: Moya.ProgressBlock?,
        completion: @escaping Moya.Completion, endpoint: Endpoint, stubBehavior: Moya.StubBehavior
    ) -> Cancellable {
        switch stubBehavior {
        case .never:
            return sendNetworkRequest(
                target, request: request, callbackQueue: callbackQueue, progress: progress, completion: completion,
                endpoint: endpoint)
        default:
            return self.stubRequest(
                target, request: request, callbackQueue: callbackQueue, completion: completion, endpoint: endpoint,
                stubBehavior: stubBehavior)
        }
    }

    func transferPlan(for endpoint: Endpoint, request: URLRequest) throws -> TransferPlan {
        var plan = TransferPlan()
        switch endpoint.task {
        case .uploadFile(let fileURL):
            plan.upload = .file(fileURL)
        case .downloadDestination(let destination), .downloadParameters(_, _, let destination):
            plan.destination = destination
        default:
            if let form = endpoint.task.multipartFormData {
                let method = Moya.Method(rawValue: request.httpMethod ?? endpoint.method.rawValue)
                guard method.supportsMultipart else {
                    throw MoyaRequestError.multipartNotSupported(method: method.rawValue)
                }
                guard !form.parts.isEmpty else { throw MoyaRequestError.emptyMultipartForm }
                plan.upload = .multipart(form)
            }
        }
        return plan
    }

    private func sendNetworkRequest(
        _ target: Target, request: URLRequest, callbackQueue: DispatchQueue?, progress: Moya.ProgressBlock?,
        completion: @escaping Moya.Completion, endpoint: Endpoint
    ) -> Cancellable {
        let queue = callbackQueue ?? defaultCallbackQueue
        let plan: TransferPlan
        do {
            plan = try transferPlan(for: endpoint, request: request)
        } catch {
            // Moya calls fatalError here; a bad target is input, so it is reported (no willSend, like a request
            // closure failure).
            completion(.failure(.underlying(error, nil)))
            return CancellableToken {}
        }

        // What Moya's request interceptor does in `adapt`: prepare (chained, in order), then willSend.
        let preparedRequest = plugins.reduce(request) { $1.prepare($0, target: target) }
        let requestType = RequestTypeWrapper(request: preparedRequest, sessionHeaders: session.headers)
        plugins.forEach { $0.willSend(requestType, target: target) }

        let isUpload: Bool
        switch plan.upload {
        case .requestBody: isUpload = false
        case .file, .multipart: isUpload = true
        }
        let tracker = ProgressTracker(queue: queue, block: progress, isUpload: isUpload)
        let context = UncheckedSendable((target: target, completion: completion, plan: plan, request: preparedRequest))

        let task = AsyncTask { [self] in
            let outgoing = URLRequestOutgoing(request: context.value.request, plan: context.value.plan)
            let result = await self.sendWithRetries(
                outgoing, target: context.value.target, pluginTarget: context.value.target,
                requestType: requestType, retriers: self.retriers,
                progress: tracker.clientProgress)
            queue.async {
                self.plugins.forEach { $0.didReceive(result, target: context.value.target) }
                tracker.finish(response: try? result.get())
                context.value.completion(result)
            }
        }
        return CancellableToken(debugDescription: { requestType.cURLDescription() }, action: { task.cancel() })
    }

    /// Sends, answers one `401` Basic/Digest challenge with the credential a plugin supplied, and asks the
    /// `RequestRetrier` plugins whether to send again. Neither happens once an attempt has started
    /// pulling a body streamed from an async sequence (what it took is gone); before that (a connection that could not
    /// be opened) both can.
    func sendWithRetries<Request: OutgoingRequest>(
        _ preparedRequest: Request, target: Target, pluginTarget: TargetType,
        requestType: RequestTypeWrapper, retriers: [RetrierPlugin],
        progress: HTTPClientProgress
    ) async
        -> Result<Moya.Response, MoyaError>
    {
        var request = preparedRequest
        var attempt = 0
        var answeredChallenge = false
        // Set while the next attempt answers a challenge: it re-sends what was adapted for the attempt it answers.
        var keepsAdaptation = false
        let maximumAttempts = 16
        while true {
            if !adapters.isEmpty && !keepsAdaptation,
                let failure = await adapted(&request, pluginTarget: pluginTarget)
            {
                return .failure(failure)
            }
            keepsAdaptation = false
            let result = validated(await request.exchange(in: session, progress: progress), target: target)
            if AsyncTask.isCancelled { return .failure(.underlying(MoyaProviderErrors.cancelled, nil)) }
            guard request.canBeSentAgain else { return result }

            if !answeredChallenge, let credential = requestType.credential,
                let authorization = AuthenticationChallenge.authorization(
                    answering: result, method: request.digestMethod,
                    uri: request.digestURI, credential: credential)
            {
                answeredChallenge = true
                request.authorize(authorization)
                keepsAdaptation = true
                continue
            }

            guard attempt + 1 < maximumAttempts else { return result }
            var decision = RetryDecision.doNotRetry
            for retrier in retriers {
                decision = await request.decision(of: retrier, target: pluginTarget, result: result, attempt: attempt)
                if case .doNotRetry = decision { continue }
                break
            }
            if case .doNotRetryWithError(let error) = decision {
                return .failure(.underlying(error, result.httpResponse))
            }
            guard case .retry(let delay, let newRequest) = decision else { return result }
            if delay > 0 {
                do {
                    try await AsyncTask.sleep(nanoseconds: UInt64(min(delay, 3600) * 1_000_000_000))
                } catch {
                    return .failure(.underlying(MoyaProviderErrors.cancelled, nil))
                }
            }
            if let newRequest { request.replace(with: newRequest, in: session) }
            attempt += 1
        }
    }

    /// Runs the `RequestAdapter` plugins on `request` for its next attempt; the error that fails it, if one threw.
    private func adapted<Request: OutgoingRequest>(_ request: inout Request, pluginTarget: TargetType) async
        -> MoyaError?
    {
        do {
            for adapter in adapters { try await request.adapt(with: adapter, target: pluginTarget, in: session) }
            return nil
        } catch {
            if AsyncTask.isCancelled || error is CancellationError {
                return .underlying(MoyaProviderErrors.cancelled, nil)
            }
            return TransportErrors.moyaError(for: error)
        }
    }

    /// The result, or the status-code failure when the target's validation rejects its response (real and stubbed
    /// requests fail validation the same way; Moya wraps an AFError for real ones).
    func validated(_ result: Result<Moya.Response, MoyaError>, target: Target) -> Result<Moya.Response, MoyaError> {
        guard case .success(let response) = result, !target.validationType.accepts(response.statusCode) else {
            return result
        }
        return .failure(.underlying(MoyaError.statusCode(response), response))
    }
}

/// Turns transport progress into `ProgressResponse`s on the callback queue and remembers the last one for the
/// final call.
final class ProgressTracker: @unchecked Sendable {
    private let lock = NSLock()
    private var last: Progress?
    private let queue: DispatchQueue
    private let block: UncheckedSendable<Moya.ProgressBlock?>
    private let isUpload: Bool

    init(queue: DispatchQueue, block: Moya.ProgressBlock?, isUpload: Bool) {
        self.queue = queue
        self.block = UncheckedSendable(block)
        self.isUpload = isUpload
    }

    var clientProgress: HTTPClientProgress {
        guard block.value != nil else { return HTTPClientProgress() }
        let update: @Sendable (Int64, Int64?) -> Void = { [self] completed, total in
            self.update(completed: completed, total: total)
        }
        return isUpload ? HTTPClientProgress(upload: update) : HTTPClientProgress(download: update)
    }

    private func update(completed: Int64, total: Int64?) {
        let progress = Progress(totalUnitCount: total ?? 0)
        progress.completedUnitCount = completed
        lock.withLock { last = progress }
        let snapshot = UncheckedSendable(progress)
        queue.async { [block] in block.value?(ProgressResponse(progress: snapshot.value)) }
    }

    /// The final progress call, with the response (nil on failure). Runs on the caller's queue.
    func finish(response: Moya.Response?) {
        guard let block = block.value else { return }
        block(ProgressResponse(progress: lock.withLock { last }, response: response))
    }
}

// MARK: - In-flight sharing

/// One request and the callers waiting for it. Every request has one; with `trackInflights` identical requests
/// join the same one.
final class InflightCall: @unchecked Sendable {
    private struct Waiter {
        let id: Int
        let completion: Moya.Completion
        let queue: DispatchQueue?
        /// An async caller's waiter: called wherever the result is delivered, never through a queue.
        let isAsync: Bool
    }

    let endpoint: Endpoint
    let identity: EndpointIdentity?
    /// Cancels the underlying work (request closure stage, stub or network task).
    let operation = CancellableWrapper()
    private let defaultQueue: DispatchQueue
    private let lock = NSLock()
    private var waiters: [Waiter] = []
    private var nextID = 0
    private var finished = false

    init(endpoint: Endpoint, identity: EndpointIdentity?, defaultQueue: DispatchQueue) {
        self.endpoint = endpoint
        self.identity = identity
        self.defaultQueue = defaultQueue
    }

    var completions: [Moya.Completion] { lock.withLock { waiters.map(\.completion) } }

    /// Adds a waiter and returns its token, or nil when the call has already finished.
    func addWaiter(_ completion: @escaping Moya.Completion, queue: DispatchQueue?, isAsync: Bool = false)
        -> Cancellable?
    {
        let id: Int? = lock.withLock {
            guard !finished else { return nil }
            nextID += 1
            waiters.append(Waiter(id: nextID, completion: completion, queue: queue, isAsync: isAsync))
            return nextID
        }
        guard let id else { return nil }
        return CancellableToken { [weak self] in self?.cancelWaiter(id) }
    }

    /// A waiter cancels: when others still wait it alone gets the cancellation error; the last one cancels the
    /// underlying work, which then completes it.
    private func cancelWaiter(_ id: Int) {
        let leaving: Waiter? = lock.withLock {
            guard !finished, let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            if waiters.count > 1 { return waiters.remove(at: index) }
            return nil
        }
        if let leaving {
            let cancelled = Result<Moya.Response, MoyaError>.failure(.underlying(MoyaProviderErrors.cancelled, nil))
            if leaving.isAsync {
                leaving.completion(cancelled)
                return
            }
            let box = UncheckedSendable(leaving.completion)
            (leaving.queue ?? defaultQueue).async { box.value(cancelled) }
        } else if lock.withLock({ !finished && waiters.contains { $0.id == id } }) {
            operation.cancel()
        }
    }

    /// Delivers the one result to every waiter, in the order they joined. Later calls do nothing.
    ///
    /// A call started through the callback API finishes on its starter's callback queue and, as in Moya, calls
    /// every completion there. A call started by an async caller finishes in its own task
    /// (`viaQueues: true`): completion-handler waiters then get the result on their callback queue (the provider's
    /// default one when they named none), async waiters where it is.
    func finish(_ result: Result<Moya.Response, MoyaError>, viaQueues: Bool = false) {
        let toNotify: [Waiter] = lock.withLock {
            guard !finished else { return [] }
            finished = true
            return waiters
        }
        let shared = UncheckedSendable(result)
        for waiter in toNotify {
            if viaQueues && !waiter.isAsync {
                let completion = UncheckedSendable(waiter.completion)
                (waiter.queue ?? defaultQueue).async { completion.value(shared.value) }
            } else {
                waiter.completion(result)
            }
        }
        lock.withLock { waiters.removeAll() }
    }

    var isFinished: Bool { lock.withLock { finished } }
}

/// The table of shared in-flight requests, keyed by what makes endpoints equal. Joining is one atomic
/// check-and-insert.
final class InflightRegistry: @unchecked Sendable {
    struct Joined {
        let call: InflightCall
        let token: Cancellable
        let isDuplicate: Bool
    }

    private let lock = NSLock()
    private var calls: [EndpointIdentity: InflightCall] = [:]

    func join(
        identity: EndpointIdentity, endpoint: Endpoint, completion: @escaping Moya.Completion,
        queue: DispatchQueue?, defaultQueue: DispatchQueue, isAsync: Bool = false
    ) -> Joined {
        lock.withLock {
            if let existing = calls[identity],
                let token = existing.addWaiter(completion, queue: queue, isAsync: isAsync)
            {
                return Joined(call: existing, token: token, isDuplicate: true)
            }
            let call = InflightCall(endpoint: endpoint, identity: identity, defaultQueue: defaultQueue)
            let token = call.addWaiter(completion, queue: queue, isAsync: isAsync) ?? SimpleCancellable()
            calls[identity] = call
            return Joined(call: call, token: token, isDuplicate: false)
        }
    }

    /// Removes `call` if it is still the entry for its identity.
    func remove(_ call: InflightCall) {
        guard let identity = call.identity else { return }
        lock.withLock {
            if calls[identity] === call { calls.removeValue(forKey: identity) }
        }
    }

    func snapshot() -> [Endpoint: [Moya.Completion]] {
        let current = lock.withLock { Array(calls.values) }
        var result: [Endpoint: [Moya.Completion]] = [:]
        for call in current { result[call.endpoint] = call.completions }
        return result
    }
}
