import HTTPWire
import NetCore

/// How ``HTTPClient/start(_:streamingBodiesLongerThan:deadline:timeout:completion:)`` hands over the response: called
/// once, on the loop the request was started from, in a job of its own.
package typealias HTTPClientCompletion = (consuming Result<HTTPClientResponseOrStream, HTTPClientError>) -> Void

/// An exchange started by ``HTTPClient/start(_:streamingBodiesLongerThan:deadline:timeout:completion:)``.
package struct HTTPClientCall {
    /// Nil when the request failed before an exchange was made (its completion has the error).
    let exchange: HTTPClientExchange?

    /// Stops the exchange (on its loop): its completion gets ``HTTPClientError/cancelled`` unless it has its result
    /// already. A streamed body already handed over is ended by dropping or cancelling its stream instead.
    package func cancel() {
        exchange?.cancel()
    }
}

extension HTTPClient {
    /// Where a request can start at once on the caller's thread (see ``startingPoint(for:)``): the caller's loop and
    /// the origin's usable addresses.
    package struct StartingPoint {
        let loopIndex: Int
        let addresses: [SocketAddress]
    }

    /// Where `request` starts if it can start at once on this thread; nil when it cannot: the caller is not on one of
    /// the client's loops, the client is shut down, the body is a file still to be opened, or the origin's addresses
    /// are not known yet (the async forms wait for those).
    package func startingPoint(for request: borrowing HTTPClientRequest) -> StartingPoint? {
        guard !isShutDown.load(ordering: .relaxed), let loopIndex = group.loops.firstIndex(where: { $0.inEventLoop })
        else { return nil }
        if case .file = request.body { return nil }
        let known =
            serverList == nil
            ? resolutions.knownAddresses(host: request.host, port: request.port)
            : serverList?.knownAddresses()
        guard let known else { return nil }
        return StartingPoint(loopIndex: loopIndex, addresses: usable(known))
    }

    /// Sends `request` from the loop the caller runs on and calls `completion` there with the response, with no task:
    /// collected, or with `threshold`, returned at the head with the body streamed when it is longer than that (as
    /// `execute(_:streamingBodiesLongerThan:)` does). The same exchange as the async forms (pools, retries of a
    /// reused connection's failure, deadlines, fair share); `deadline` and `timeout` as in
    /// ``execute(_:deadline:timeout:progress:)``.
    ///
    /// Returns nil, having done nothing, when the exchange cannot start at once on this thread (see
    /// ``startingPoint(for:)``). Every other failure goes to `completion`. The exchange keeps a copy of `request`; a
    /// caller that owns its request hands it over with ``start(_:from:streamingBodiesLongerThan:deadline:timeout:completion:)``.
    package func start(
        _ request: HTTPClientRequest, streamingBodiesLongerThan threshold: Int? = nil,
        deadline: ContinuousClock.Instant? = nil, timeout: Duration? = nil,
        completion: @escaping HTTPClientCompletion
    ) -> HTTPClientCall? {
        guard let point = startingPoint(for: request) else { return nil }
        return start(
            request, from: point, streamingBodiesLongerThan: threshold, deadline: deadline, timeout: timeout,
            completion: completion)
    }

    /// Sends `request`, moved into its exchange, from `point` (``startingPoint(for:)``, taken on this thread just
    /// before): as ``start(_:streamingBodiesLongerThan:deadline:timeout:completion:)`` does, with no way left to fail
    /// but through `completion`.
    package func start(
        _ request: consuming HTTPClientRequest, from point: StartingPoint, streamingBodiesLongerThan threshold: Int?,
        deadline: ContinuousClock.Instant?, timeout: Duration?, completion: @escaping HTTPClientCompletion
    ) -> HTTPClientCall {
        let prepared: PreparedExchange
        do {
            prepared = try prepare(
                consume request, deadline: deadline, timeout: timeout, progress: HTTPClientProgress(), file: nil,
                addresses: point.addresses, onLoop: point.loopIndex)
        } catch {
            let failure = (error as? HTTPClientError) ?? .requestBodyFailed(reason: "\(error)")
            group.loops[point.loopIndex].executeLocally { completion(.failure(failure)) }
            return HTTPClientCall(exchange: nil)
        }
        // On the loop already: submitted at once, the delivery moved in.
        prepared.submit(.callback(threshold: threshold, completion))
        return HTTPClientCall(exchange: prepared.exchange)
    }
}
