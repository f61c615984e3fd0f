import Foundation
import HTTPClientCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Sending in the calling task (package-internal fast path)

extension MoyaProvider {

    /// Sends a request inside the calling Swift task and returns the result after the plugins' `process`.
    ///
    /// The same pipeline as `request(_:callbackQueue:progress:completion:)` (endpoint, request closure, stub
    /// behaviour, `prepare`, `willSend`, the retriers and credential challenge, `didReceive`, `process`), with three
    /// differences that make it cheap for a server calling from its event loop:
    /// * no new task and no callback queue: the exchange runs on the caller's executor and the result is returned, so
    ///   a request never changes threads inside Moya;
    /// * the request is never shared with identical in-flight requests (`trackInflights` is not consulted), so no
    ///   endpoint identity is computed;
    /// * cancelling the calling task cancels the request (the result is the cancellation error).
    ///
    /// With `streamingBodiesAbove`, a network response whose body is longer than that many bytes (or of unknown
    /// length) is not collected: its `data` is empty and `streamedBody` delivers the bytes with back-pressure.
    package func requestInCurrentTask(_ target: Target, streamingBodiesAbove: Int? = nil) async -> Result<
        Moya.Response, MoyaError
    > {
        // The plugins' view of the target, made once: converting a large target (a `MultiTarget`) to an existential
        // allocates a box on every hook call otherwise.
        let pluginTarget: TargetType = target
        let result = await unprocessedResult(
            target, pluginTarget: pluginTarget, endpoint: endpoint(target),
            streamingBodiesAbove: streamingBodiesAbove)
        return plugins.reduce(result) { $1.process($0, target: pluginTarget) }
    }

    /// The pipeline of ``requestInCurrentTask(_:streamingBodiesAbove:)`` up to `didReceive`: the result before the
    /// plugins' `process`.
    func unprocessedResult(
        _ target: Target, pluginTarget: TargetType, endpoint: Endpoint,
        streamingBodiesAbove: Int? = nil
    ) async -> Result<Moya.Response, MoyaError> {
        await result(
            of: transportStep(
                target, pluginTarget: pluginTarget, endpoint: endpoint, streamingBodiesAbove: streamingBodiesAbove),
            target: target, pluginTarget: pluginTarget, endpoint: endpoint, streamingBodiesAbove: streamingBodiesAbove)
    }

    /// The pipeline after `step` (see ``transportStep(_:pluginTarget:endpoint:streamingBodiesAbove:)``), up to
    /// `didReceive`. Inlined into `unprocessedResult`: out of line, its frame is one more task allocation.
    @inline(__always)
    func result(
        of step: consuming TransportStep, target: Target, pluginTarget: TargetType, endpoint: Endpoint,
        streamingBodiesAbove: Int?
    ) async -> Result<Moya.Response, MoyaError> {
        switch step {
        case .finished(let result):
            return result
        case .stub(let source, let behavior):
            return await stubResult(
                target, pluginTarget: pluginTarget, endpoint: endpoint, behavior: behavior,
                requestSource: source)
        case .send(let outgoing, let requestType):
            let result: Result<Moya.Response, MoyaError>
            if retriers.isEmpty && adapters.isEmpty && requestType.credential == nil {
                // Nothing can send the request again (no retrier, adapter or challenge to answer): one exchange, as
                // `sendWithRetries` would make it, without the retry loop's frame.
                let exchanged = await outgoing.exchange(in: session, progress: HTTPClientProgress())
                result =
                    AsyncTask.isCancelled
                    ? .failure(.underlying(MoyaProviderErrors.cancelled, nil))
                    : validated(consume exchanged, target: target)
            } else {
                result = await sendWithRetries(
                    outgoing, target: target, pluginTarget: pluginTarget, requestType: requestType,
                    retriers: retriers, progress: HTTPClientProgress())
            }
            plugins.forEach { $0.didReceive(result, target: pluginTarget) }
            return result
        case .urlRequest(let stubBehavior):
            return await urlRequestResult(
                target, pluginTarget: pluginTarget, endpoint: endpoint, stubBehavior: stubBehavior,
                streamingBodiesAbove: streamingBodiesAbove)
        }
    }

    private func urlRequestResult(
        _ target: Target, pluginTarget: TargetType, endpoint: Endpoint, stubBehavior: Moya.StubBehavior,
        streamingBodiesAbove: Int?
    ) async -> Result<Moya.Response, MoyaError> {
        let request: URLRequest
        switch await builtRequest(endpoint) {
        case .success(let built): request = built
        case .failure(let error): return .failure(error)
        }
        if AsyncTask.isCancelled { return cancelledResult(pluginTarget) }

        guard case .never = stubBehavior else {
            let prepared = notifyPluginsOfImpendingStub(for: request, target: target)
            return await stubResult(
                target, pluginTarget: pluginTarget, endpoint: endpoint, behavior: stubBehavior,
                requestSource: RequestTypeWrapper(request: prepared))
        }
        var plan: TransferPlan
        do {
            plan = try transferPlan(for: endpoint, request: request)
        } catch {
            return .failure(.underlying(error, nil))
        }
        plan.streamingBodiesAbove = streamingBodiesAbove
        let prepared = plugins.reduce(request) { $1.prepare($0, target: pluginTarget) }
        let requestType = RequestTypeWrapper(request: prepared, sessionHeaders: session.headers)
        plugins.forEach { $0.willSend(requestType, target: pluginTarget) }
        let result = await sendWithRetries(
            URLRequestOutgoing(request: prepared, plan: plan), target: target,
            pluginTarget: pluginTarget, requestType: requestType, retriers: retriers,
            progress: HTTPClientProgress())
        plugins.forEach { $0.didReceive(result, target: pluginTarget) }
        return result
    }

    /// The synchronous part of ``unprocessedResult(_:pluginTarget:endpoint:streamingBodiesAbove:)`` (kept out of the
    /// async function, whose every local costs a task allocation).
    func transportStep(
        _ target: Target, pluginTarget: TargetType, endpoint: Endpoint,
        streamingBodiesAbove: Int?
    ) -> TransportStep {
        transportStep(
            target, pluginTarget: pluginTarget, endpoint: endpoint, stubBehavior: stubClosure(target),
            streamingBodiesAbove: streamingBodiesAbove)
    }

    /// ``transportStep(_:pluginTarget:endpoint:streamingBodiesAbove:)`` with the stub closure's answer for `target`.
    func transportStep(
        _ target: Target, pluginTarget: TargetType, endpoint: Endpoint, stubBehavior: Moya.StubBehavior,
        streamingBodiesAbove: Int?
    ) -> TransportStep {
        guard let lane = transportLane, let mapped = lane.mapping(endpoint) else { return .urlRequest(stubBehavior) }
        var request: TransportRequest
        // Consumed, so that the plugins change the only copy of the request (no copy on write).
        switch consume mapped {
        case .success(let built): request = built
        case .failure(let error): return .finished(.failure(error))
        }
        if AsyncTask.isCancelled { return .finished(cancelledResult(pluginTarget)) }

        prepare(&request, lane: lane, pluginTarget: pluginTarget)
        guard case .never = stubBehavior else {
            return .stub(announce(consume request, pluginTarget: pluginTarget), stubBehavior)
        }
        // The plugins' wrapper takes the request (its `URLRequest` is made from it on demand); the outgoing request sends
        // it from there.
        let requestType = announce(consume request, pluginTarget: pluginTarget)
        return .send(TransportOutgoing(sharing: requestType, streamingBodiesAbove: streamingBodiesAbove), requestType)
    }

    /// Runs the plugins' transport `prepare` on `request`.
    func prepare(_ request: inout TransportRequest, lane: TransportLane, pluginTarget: TargetType) {
        for plugin in lane.plugins { plugin.prepare(&request, target: pluginTarget) }
    }

    /// The wrapper the plugins see for `request`, after their `willSend`. A request that is not sent (a stub's) is
    /// handed over rather than copied.
    func announce(_ request: consuming TransportRequest, pluginTarget: TargetType) -> RequestTypeWrapper {
        let requestType = RequestTypeWrapper(transport: request, sessionHeaders: session.headers)
        plugins.forEach { $0.willSend(requestType, target: pluginTarget) }
        return requestType
    }

    /// The result of a request stubbed `.immediate` on the transport lane, computed synchronously: the pipeline of
    /// ``requestInCurrentTask(_:streamingBodiesAbove:)`` (endpoint, stub behaviour, `prepare`, `willSend`, the sample,
    /// validation, `didReceive`, `process`) without a task or a suspension, so a server can answer from its event
    /// loop. `nil` when the provider has no transport lane, the stub closure does not answer `.immediate`, or the
    /// endpoint needs the `URLRequest` path: then no plugin has seen the request (the endpoint and stub closures have
    /// run, so they should decide the same way when the request is then sent with `requestInCurrentTask`).
    package func requestImmediately(_ target: Target) -> Result<Moya.Response, MoyaError>? {
        guard let lane = transportLane, case .immediate = stubClosure(target) else { return nil }
        let endpoint = self.endpoint(target)
        guard let mapped = lane.mapping(endpoint) else { return nil }
        let pluginTarget: TargetType = target
        var result: Result<Moya.Response, MoyaError>
        switch consume mapped {
        case .success(var request):
            prepare(&request, lane: lane, pluginTarget: pluginTarget)
            let requestType = announce(consume request, pluginTarget: pluginTarget)
            result = stubResult(
                target, pluginTarget: pluginTarget, endpoint: endpoint, plugins: plugins,
                requestSource: requestType)
        case .failure(let error):
            result = .failure(error)
        }
        // Each plugin's result replaces the last in place (`reduce` copies the result into and out of its closure).
        for plugin in plugins { result = plugin.process(consume result, target: pluginTarget) }
        return result
    }

    /// A stub's result, after its delay (cancelling the task during the delay cancels the request).
    private func stubResult(
        _ target: Target, pluginTarget: TargetType, endpoint: Endpoint, behavior: Moya.StubBehavior,
        requestSource: RequestTypeWrapper
    ) async -> Result<Moya.Response, MoyaError> {
        if case .delayed(let seconds) = behavior {
            do {
                // Bounded to an hour; NaN (which `min`/`max` pass through) waits not at all rather than trapping.
                let bounded = seconds.isNaN ? 0 : min(max(seconds, 0), 3600)
                try await AsyncTask.sleep(nanoseconds: UInt64(bounded * 1_000_000_000))
            } catch {
                return cancelledResult(pluginTarget)
            }
        }
        return stubResult(
            target, pluginTarget: pluginTarget, endpoint: endpoint, plugins: plugins, requestSource: requestSource)
    }

    /// The cancellation error, after the plugins' `didReceive`.
    func cancelledResult(_ target: TargetType) -> Result<Moya.Response, MoyaError> {
        let error = MoyaError.underlying(MoyaProviderErrors.cancelled, nil)
        plugins.forEach { $0.didReceive(.failure(error), target: target) }
        return .failure(error)
    }

    /// Runs the request closure; a closure that answers synchronously (the default one does) costs no suspension.
    private func builtRequest(_ endpoint: Endpoint) async -> Result<URLRequest, MoyaError> {
        let pending = PendingResult<Result<URLRequest, MoyaError>>()
        requestClosure(endpoint) { pending.deliver($0) }
        return await pending.value()
    }
}

/// What a request comes to before anything waits, on the transport lane: plugins prepare a `TransportRequest`
/// (as `TransportPlugin`s) and see a `URLRequest` only if they ask for one. Not nested in the generic provider, whose
/// nested types get their metadata instantiated on every use.
enum TransportStep {
    /// The endpoint failed to map, or the task is cancelled.
    case finished(Result<Moya.Response, MoyaError>)
    /// Prepared, and stubbed; the wrapper the plugins saw is the response's request source.
    case stub(RequestTypeWrapper, Moya.StubBehavior)
    /// Prepared, to be sent (the outgoing request's source is the wrapper the plugins saw).
    case send(TransportOutgoing, RequestTypeWrapper)
    /// No transport lane for this endpoint: the `URLRequest` pipeline.
    case urlRequest(Moya.StubBehavior)
}
