import Foundation
import HTTPClientCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session's `RequestInterceptor` (Alamofire's, as Moya re-exports it) adapts every attempt after the plugins, and
/// its failures end the request, against the loopback httpbin.
@Suite struct RequestInterceptorTests {
    @Test func everyAttemptIsAdaptedAfterThePluginsAndTheResponseShowsIt() async throws {
        try await withHttpbin { bin async throws in
            let interceptor = CountingInterceptor()
            let configuration = URLSessionConfiguration.default
            configuration.headers = ["X-Session": "s"]
            let session = Session(
                configuration: configuration, startRequestsImmediately: false, interceptor: interceptor)
            let seen = Recorder<String>()
            let provider = MoyaProvider<BinTarget>(
                session: session,
                plugins: [
                    SeenHeaderPlugin(seen: seen),
                    RetryPlugin(policy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
                ])
            let key = UUID().uuidString
            let response = try await provider.response(BinTarget(bin, "/flaky/\(key)/1"))
            #expect(response.statusCode == 200)
            #expect(bin.hits("/flaky/\(key)/1") == 2)
            #expect(interceptor.count == 2, "each attempt is adapted")
            #expect(bin.lastHeaders("/flaky/\(key)/1")?.first(name: "X-Adapted") == "2")
            #expect(
                bin.lastHeaders("/flaky/\(key)/1")?.first(name: "X-Session") == "s", "configuration.headers are sent")
            #expect(seen.values == ["none"], "willSend sees the prepared request, before adaptation")
            #expect(
                response.request?.value(forHTTPHeaderField: "X-Adapted") == "2", "Response.request is what was sent")
        }
    }

    @Test func aFailedAdaptationEndsTheRequestWithoutSendingIt() async throws {
        try await withHttpbin { bin async throws in
            let session = Session(
                configuration: .default, startRequestsImmediately: false, interceptor: FailingInterceptor())
            let provider = MoyaProvider<BinTarget>(session: session)
            let result = await provider.requestWithHandler(BinTarget(bin, "/get"))
            guard case .failure(.underlying(let error, nil)) = result else {
                Issue.record("expected .underlying(error, nil), got \(result)")
                return
            }
            #expect(error as? InterceptorFailure == InterceptorFailure())
            #expect(bin.hits("/get") == 0)
        }
    }

    @Test func anInterceptorKeepsTheURLRequestPath() {
        let session = Session(
            client: HTTPClient(), headers: [:], interceptor: CountingInterceptor(), redirectHandler: .doNotFollow)
        let provider = MoyaProvider<BinTarget>(
            endpointClosure: MoyaProvider<BinTarget>.defaultEndpointMapping,
            requestClosure: MoyaProvider<BinTarget>.defaultRequestMapping,
            stubClosure: MoyaProvider<BinTarget>.neverStub, session: session, plugins: [], trackInflights: false,
            transportMapping: { $0.transportRequest() })
        #expect(provider.transportLane == nil)
    }
}

/// Adds `X-Adapted: <n>` for the n-th request it adapts.
private final class CountingInterceptor: RequestInterceptor {
    private let adapted = Recorder<Int>()
    var count: Int { adapted.count }

    func adapt(
        _ urlRequest: URLRequest, for session: Session, completion: @escaping (Result<URLRequest, Error>) -> Void
    ) {
        adapted.append(1)
        var request = urlRequest
        request.headers.add(name: "X-Adapted", value: String(adapted.count))
        completion(.success(request))
    }
}

private struct InterceptorFailure: Error, Equatable {}

private struct FailingInterceptor: RequestInterceptor {
    func adapt(
        _ urlRequest: URLRequest, for session: Session, completion: @escaping (Result<URLRequest, Error>) -> Void
    ) {
        completion(.failure(InterceptorFailure()))
    }
}

/// Records the `X-Adapted` header `willSend` is shown ("none" when absent).
private struct SeenHeaderPlugin: PluginType {
    let seen: Recorder<String>
    func willSend(_ request: RequestType, target: TargetType) {
        seen.append(request.request?.value(forHTTPHeaderField: "X-Adapted") ?? "none")
    }
}
