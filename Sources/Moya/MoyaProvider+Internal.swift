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
    /// Consumes `result`: the caller's result is handed back as it is, not copied.
    func validated(_ result: consuming Result<Moya.Response, MoyaError>, target: Target)
        -> Result<Moya.Response, MoyaError>
    {
        validated(result, by: target.validationType)
    }

    /// `result`, or the status code error when `validation` does not accept its status.
    func validated(_ result: consuming Result<Moya.Response, MoyaError>, by validation: ValidationType)
        -> Result<Moya.Response, MoyaError>
    {
        guard case .success(let response) = result, !validation.accepts(response.statusCode) else {
            return result
        }
        return .failure(Self.validationFailure(response))
    }

    /// The error for a response whose status the target's validation refuses.
    static func validationFailure(_ response: Moya.Response) -> MoyaError {
        .underlying(MoyaError.statusCode(response), response)
    }
}
