import Foundation
import HTTPClientCore
import Locking

/// Receives the result of `MoyaProvider.request(onLoop:streamingBodiesAbove:completion:)`, on the loop the request
/// was started from (an object rather than a closure: the caller's own state, with no context to allocate).
package protocol MoyaLoopCompletion: AnyObject {
    func requestCompleted(_ result: consuming Result<Moya.Response, MoyaError>)

    /// Whether this completion takes the client's response as it came (``requestCompleted(exchanged:)``) when nobody
    /// else would see a `Response`: the provider's plugins all only prepare (`PreparingTransportPlugin`), and it has
    /// no retrier or adapter. False by default.
    var acceptsClientResponses: Bool { get }

    /// The validated result of a request sent for a completion that ``acceptsClientResponses``, with no `Response`
    /// made: the client's response, or the error `requestCompleted(_:)` would get (for a status the target's
    /// validation refuses, the `statusCode` error, whose `Response` has no `request`). The default makes the
    /// `Response` and calls `requestCompleted(_:)`.
    func requestCompleted(exchanged result: consuming Result<HTTPClientResponseOrStream, MoyaError>)
}

extension MoyaLoopCompletion {
    package var acceptsClientResponses: Bool { false }

    package func requestCompleted(exchanged result: consuming Result<HTTPClientResponseOrStream, MoyaError>) {
        switch consume result {
        case .success(let response):
            requestCompleted(.success(Moya.Response(unrecorded: response)))
        case .failure(let error):
            requestCompleted(.failure(error))
        }
    }
}

/// A request started by `MoyaProvider.request(onLoop:streamingBodiesAbove:completion:)`.
package struct MoyaLoopRequest {
    fileprivate let call: HTTPClientCall?
    fileprivate let task: AsyncTask<Void, Never>?

    /// Cancels the request: its completion gets the cancellation error (after the plugins' `didReceive` and
    /// `process`) unless its result is in already. On the loop the request was started from.
    package func cancel() {
        call?.cancel()
        task?.cancel()
    }
}

extension MoyaProvider {
    /// ``requestInCurrentTask(_:streamingBodiesAbove:)``'s pipeline, answered by callback on the caller's event loop
    /// instead of returned: for a server's handler that runs on the loop without a task.
    ///
    /// The endpoint, stub behaviour, the plugins' `prepare` and `willSend` run now. A request that nothing could send
    /// again (no retrier, adapter or challenge to answer) then goes to the client with no task, and `completion`
    /// runs on this loop, in a job of its own, after validation and the plugins' `didReceive` and `process`. Any
    /// other request (stubbed, on the `URLRequest` path, retried, or from a thread that is not one of the client's
    /// loops) goes on in a task preferring the loop. `completion` is never called before this returns.
    package func request(
        onLoop target: Target, streamingBodiesAbove: Int? = nil,
        completion: any MoyaLoopCompletion
    ) -> MoyaLoopRequest {
        let pluginTarget: TargetType = target
        let endpoint: Endpoint
        let step: TransportStep
        if completion.acceptsClientResponses, let lane = transportLane, lane.onlyPrepares, retriers.isEmpty,
            adapters.isEmpty
        {
            switch sendUnseen(
                target, lane: lane, pluginTarget: pluginTarget, streamingBodiesAbove: streamingBodiesAbove,
                completion: completion)
            {
            case .sent(let call): return MoyaLoopRequest(call: call, task: nil)
            case .notSent(let notSent, let itsEndpoint):
                step = notSent
                endpoint = itsEndpoint
            }
        } else {
            endpoint = self.endpoint(target)
            step = transportStep(
                target, pluginTarget: pluginTarget, endpoint: endpoint, streamingBodiesAbove: streamingBodiesAbove)
        }
        if case .send(let outgoing, let requestType) = step, retriers.isEmpty, adapters.isEmpty,
            requestType.credential == nil,
            let call = send(outgoing, pluginTarget: pluginTarget, completion: completion)
        {
            return MoyaLoopRequest(call: call, task: nil)
        }
        return inTask(
            step, target: target, pluginTarget: pluginTarget, endpoint: endpoint,
            streamingBodiesAbove: streamingBodiesAbove, completion: completion)
    }

    /// The rest of the pipeline after `step`, in a task preferring the caller's loop. Out of line: the tuple of its
    /// captures would otherwise have its metadata looked up on every request, the callback's included.
    @inline(never)
    private func inTask(
        _ step: consuming TransportStep, target: Target, pluginTarget: TargetType, endpoint: Endpoint,
        streamingBodiesAbove: Int?, completion: any MoyaLoopCompletion
    ) -> MoyaLoopRequest {
        let waiting = UncheckedSendable((step, target, pluginTarget, endpoint, completion))
        let task = AsyncTask(executorPreference: session.client.currentLoop) {
            let (step, target, pluginTarget, endpoint, completion) = waiting.value
            var result = await self.result(
                of: step, target: target, pluginTarget: pluginTarget, endpoint: endpoint,
                streamingBodiesAbove: streamingBodiesAbove)
            for plugin in self.plugins { result = plugin.process(consume result, target: pluginTarget) }
            completion.requestCompleted(result)
        }
        return MoyaLoopRequest(call: nil, task: task)
    }

    /// What ``sendUnseen(_:lane:pluginTarget:streamingBodiesAbove:completion:)`` did.
    private enum UnseenSend {
        case sent(HTTPClientCall)
        /// Not sent by callback: the step the pipeline goes on from, and the target's endpoint.
        case notSent(TransportStep, Endpoint)
    }

    /// ``transportStep(_:pluginTarget:endpoint:streamingBodiesAbove:)`` for plugins that only prepare, with a request
    /// sent at once by callback: made by ``targetMapping`` when it maps the target (no `Endpoint`), no `RequestType`
    /// for `willSend` (the plugins keep the default, which reads nothing), and the client's response handed to the
    /// completion as it came, after validation (`didReceive` and `process` are the defaults too). A stubbed
    /// request, one on the `URLRequest` path, and one the client cannot start at once go on as any other.
    private func sendUnseen(
        _ target: Target, lane: TransportLane, pluginTarget: TargetType, streamingBodiesAbove: Int?,
        completion: any MoyaLoopCompletion
    ) -> UnseenSend {
        let stubBehavior = stubClosure(target)
        var request: TransportRequest
        if case .never = stubBehavior, let mapped = targetMapping?(target) {
            request = mapped
        } else {
            let endpoint = self.endpoint(target)
            guard case .never = stubBehavior, let mapped = lane.mapping(endpoint) else {
                return .notSent(
                    transportStep(
                        target, pluginTarget: pluginTarget, endpoint: endpoint, stubBehavior: stubBehavior,
                        streamingBodiesAbove: streamingBodiesAbove), endpoint)
            }
            switch consume mapped {
            case .success(let built): request = built
            case .failure(let error): return .notSent(.finished(.failure(error)), endpoint)
            }
        }
        prepare(&request, lane: lane, pluginTarget: pluginTarget)
        let validation = pluginTarget.validationType
        let completed: HTTPClientCompletion = { exchanged in
            switch consume exchanged {
            case .success(let response):
                guard validation.accepts(response.status) else {
                    completion.requestCompleted(
                        exchanged: .failure(Self.validationFailure(Moya.Response(unrecorded: response))))
                    return
                }
                // Handed on (the binding would otherwise hold the response until the call returns).
                completion.requestCompleted(exchanged: .success(consume response))
            case .failure(let error):
                completion.requestCompleted(exchanged: .failure(TransportErrors.moyaError(for: error)))
            }
        }
        if session.headers.isEmpty, let point = session.client.startingPoint(for: request.http) {
            // The request moves into the client's exchange: no copy of its fields.
            let deadline = request.deadline
            let timeout = request.timeout
            return .sent(
                session.client.start(
                    request.http.take(), from: point, streamingBodiesLongerThan: streamingBodiesAbove,
                    deadline: deadline, timeout: timeout, completion: completed))
        }
        // Session headers, or a client that cannot start at once: sent as any other prepared request.
        let requestType = announce(consume request, pluginTarget: pluginTarget)
        return .notSent(
            .send(TransportOutgoing(sharing: requestType, streamingBodiesAbove: streamingBodiesAbove), requestType),
            self.endpoint(target))
    }

    /// Sends `outgoing` once with the client's callback; nil when the client cannot start it at once (see
    /// `HTTPClient.start`).
    private func send(
        _ outgoing: TransportOutgoing, pluginTarget: TargetType,
        completion: any MoyaLoopCompletion
    ) -> HTTPClientCall? {
        let source = outgoing.source
        let url = ResponseURL.transport(source.transport.http.origin, source.transport.http.target)
        let completed: HTTPClientCompletion = { exchanged in
            var result: Result<Moya.Response, MoyaError>
            switch consume exchanged {
            case .success(let response):
                result = .success(
                    Moya.Response(transport: TransportResponse(response, url: url), requestSource: source))
            case .failure(let error):
                result = .failure(TransportErrors.moyaError(for: error))
            }
            result = self.validated(consume result, by: pluginTarget.validationType)
            self.plugins.forEach { $0.didReceive(result, target: pluginTarget) }
            for plugin in self.plugins { result = plugin.process(consume result, target: pluginTarget) }
            completion.requestCompleted(result)
        }
        guard session.headers.isEmpty else {
            let request = source.transport
            return session.client.start(
                session.clientRequest(for: request), streamingBodiesLongerThan: outgoing.streamingBodiesAbove,
                deadline: request.deadline, timeout: request.timeout, completion: completed)
        }
        // Sent from the source the plugins saw, borrowed: the client's exchange keeps the one copy.
        return session.client.start(
            source.transport.http, streamingBodiesLongerThan: outgoing.streamingBodiesAbove,
            deadline: source.transport.deadline, timeout: source.transport.timeout, completion: completed)
    }
}
