import Foundation
import HTTPClientCore
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A prepared request as the provider sends it, again when a challenge or a retrier asks: a `URLRequest` through the
/// session (redirects, uploads, downloads), or a `TransportRequest` straight to the client.
protocol OutgoingRequest {
    /// One exchange: the response before validation, or the transport's error.
    func exchange(in session: Session, progress: HTTPClientProgress) async -> Result<Moya.Response, MoyaError>
    /// Whether the request can be sent again (a challenge answer, a retry): false once an attempt has started pulling
    /// a body streamed from an async sequence (what it took is gone).
    var canBeSentAgain: Bool { get }
    /// The method and request-target a Digest answer signs.
    var digestMethod: String { get }
    var digestURI: String { get }
    /// Sets `Authorization` (answering a challenge).
    mutating func authorize(_ value: String)
    /// What `retrier` decides about `result`.
    func decision(
        of retrier: RetrierPlugin, target: TargetType, result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision
    /// Goes on with the request a retrier returned.
    mutating func replace(with request: URLRequest, in session: Session)
    /// Lets `adapter` adapt the request for the next attempt (see ``RequestAdapter``).
    mutating func adapt(with adapter: AdapterPlugin, target: TargetType, in session: Session) async throws
}

/// A `URLRequest` sent through `Session.send`, with its upload and download plan.
struct URLRequestOutgoing: OutgoingRequest {
    var request: URLRequest
    let plan: TransferPlan

    func exchange(in session: Session, progress: HTTPClientProgress) async -> Result<Moya.Response, MoyaError> {
        let head: TransportResponse
        let data: Data
        let request: URLRequest
        do {
            request = try await session.adapted(self.request)
        } catch {
            return .failure(.underlying(error, nil))
        }
        do {
            (head, data) = try await session.send(
                request, upload: plan.upload, progress: progress,
                streamingBodiesAbove: plan.destination == nil ? plan.streamingBodiesAbove : nil)
        } catch {
            return .failure(TransportErrors.moyaError(for: error))
        }
        let source = RequestTypeWrapper(request: request)
        guard let destination = plan.destination else {
            return .success(Moya.Response(transport: head, data: data, requestSource: source))
        }
        do {
            guard let httpResponse = head.makeHTTPURLResponse() else {
                throw HTTPClientError.malformedResponse(reason: "status \(head.status)")
            }
            try Session.storeDownload(data, response: httpResponse, destination: destination)
            return .success(Moya.Response(transport: head, data: Data(), requestSource: source))
        } catch {
            return .failure(.underlying(error, Moya.Response(transport: head, data: Data(), requestSource: source)))
        }
    }

    var canBeSentAgain: Bool { true }

    var digestMethod: String { request.httpMethod ?? "GET" }

    var digestURI: String {
        var uri = request.url?.path ?? "/"
        if uri.isEmpty { uri = "/" }
        if let query = request.url?.query { uri += "?" + query }
        return uri
    }

    mutating func authorize(_ value: String) {
        request.setValue(value, forHTTPHeaderField: "Authorization")
    }

    func decision(
        of retrier: RetrierPlugin, target: TargetType, result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        await retrier.retrier.retry(request, for: target, dueTo: result, attempt: attempt)
    }

    mutating func replace(with request: URLRequest, in session: Session) {
        self.request = request
    }

    mutating func adapt(with adapter: AdapterPlugin, target: TargetType, in session: Session) async throws {
        request = try await adapter.adapter.adapt(request, for: target)
    }
}

/// A `TransportRequest` sent straight to the session's client; its `URLRequest` is made only if someone reads it.
///
/// The request is the source's (`RequestTypeWrapper.transport`), sent from there: the wrapper the plugins saw and the
/// request sent are one value, not two copies. Changing the request (a challenge's answer, a retrier's or an
/// adapter's request) makes a new source.
struct TransportOutgoing: OutgoingRequest {
    /// The wrapper whose `transport` is sent; the response's request source.
    private(set) var source: RequestTypeWrapper
    let streamingBodiesAbove: Int?
    /// The streamed body, if the body is a stream: it knows whether an attempt has pulled from it.
    private let bodyPulled: TrackedBodyStream?

    /// The request as it is sent. Setting it makes a new source (with the same session headers).
    var request: TransportRequest {
        get { source.transport }
        set { source = RequestTypeWrapper(transport: newValue, sessionHeaders: source.sessionHeaders) }
    }

    /// Sends `source`'s transport request. A streamed body is wrapped to track its pulls (then in a new source).
    init(sharing source: RequestTypeWrapper, streamingBodiesAbove: Int?) {
        self.source = source
        self.streamingBodiesAbove = streamingBodiesAbove
        if case .stream(let stream, let length) = source.transport.http.body {
            let tracked = TrackedBodyStream(stream)
            var request = source.transport
            request.http.body = .stream(AsyncThrowingStream(unfolding: { try await tracked.next() }), length: length)
            self.source = RequestTypeWrapper(transport: request, sessionHeaders: source.sessionHeaders)
            bodyPulled = tracked
        } else {
            bodyPulled = nil
        }
    }

    /// Inlined, with `Session.send`, into the provider's pipeline: out of line, each is one more task allocation.
    @inline(__always)
    func exchange(in session: Session, progress: HTTPClientProgress) async -> Result<Moya.Response, MoyaError> {
        do {
            let head = try await session.send(
                source.transport, progress: progress, streamingBodiesAbove: streamingBodiesAbove)
            return .success(Moya.Response(transport: head, requestSource: source))
        } catch {
            return .failure(TransportErrors.moyaError(for: error))
        }
    }

    var canBeSentAgain: Bool { !(bodyPulled?.wasPulled ?? false) }

    var digestMethod: String { request.http.method.rawValue }

    var digestURI: String { request.http.target }

    mutating func authorize(_ value: String) {
        var request = self.request
        request.http.headers.replaceOrAdd(name: "Authorization", value: value)
        source = RequestTypeWrapper(transport: request)
    }

    func decision(
        of retrier: RetrierPlugin, target: TargetType, result: Result<Moya.Response, MoyaError>,
        attempt: Int
    ) async -> RetryDecision {
        if let transportRetrier = retrier.transport {
            return await transportRetrier.retry(request, for: target, dueTo: result, attempt: attempt)
        }
        guard let urlRequest = source.request else { return .doNotRetry }
        return await retrier.retrier.retry(urlRequest, for: target, dueTo: result, attempt: attempt)
    }

    /// A `URLRequest` cannot carry a streamed body: when the retrier's request has no body of its own, the stream (not
    /// pulled yet, or the retry would not be asked for) goes with it. The whole request's deadline stays.
    mutating func replace(with request: URLRequest, in session: Session) {
        guard var http = try? session.clientRequest(for: request, upload: .requestBody) else { return }
        if case .stream = self.request.http.body, request.httpBody == nil, request.httpBodyStream == nil {
            http.body = self.request.http.body
        }
        var replacement = TransportRequest(http: http, timeout: TransportErrors.timeout(of: request))
        replacement.deadline = self.request.deadline
        source = RequestTypeWrapper(transport: replacement, request: request)
    }

    /// The adapted request is what the response's `request` shows. An adapter without a transport form (which a
    /// transport lane does not take; see `TransportLane`) adapts the request's `URLRequest` form.
    mutating func adapt(with adapter: AdapterPlugin, target: TargetType, in session: Session) async throws {
        if let transport = adapter.transport {
            var request = self.request
            try await transport.adapt(&request, for: target)
            source = RequestTypeWrapper(transport: request)
        } else if let urlRequest = source.request {
            replace(with: try await adapter.adapter.adapt(urlRequest, for: target), in: session)
        }
    }
}

/// How transport failures become `MoyaError`s.
enum TransportErrors {
    static func moyaError(for error: Swift.Error) -> MoyaError {
        switch error {
        case HTTPClientError.cancelled, is CancellationError:
            return .underlying(MoyaProviderErrors.cancelled, nil)
        case MoyaRequestError.unsupportedURL(let url):
            return .requestMapping(url)
        case let moyaError as MoyaError:
            return moyaError
        default:
            return .underlying(error, nil)
        }
    }

    /// A `URLRequest`'s `timeoutInterval` as the session applies it (non-positive, infinite or huge: none).
    static func timeout(of request: URLRequest) -> Duration? {
        let interval = request.timeoutInterval
        guard interval > 0, interval.isFinite, interval < 1e9 else { return nil }
        return .milliseconds(Int64(interval * 1000))
    }
}

/// A request body stream that remembers whether it was pulled from. Its chunks are pulled one at a time by one
/// attempt's body pump (never concurrently), which is what makes the unchecked iterator safe.
final class TrackedBodyStream: @unchecked Sendable {
    private var iterator: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
    private let pulled = Atomic<Bool>(false)

    init(_ stream: AsyncThrowingStream<[UInt8], any Error>) {
        iterator = stream.makeAsyncIterator()
    }

    /// The next chunk; marks the stream as pulled from.
    func next() async throws -> [UInt8]? {
        pulled.store(true, ordering: .relaxed)
        return try await iterator.next()
    }

    /// Whether an attempt has started pulling (what it took cannot be sent again).
    var wasPulled: Bool { pulled.load(ordering: .relaxed) }
}
