import Foundation
import Moya
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The example test of Sources/Moya/Moya.docc/StubbingAndTesting.md, as the page shows it (keep the two the same):
// the page's target and test, run here so that the test it recommends passes.

private enum Zen: TargetType {
    case quote
    case missing

    var baseURL: URL { URL(string: "https://api.github.com")! }
    var path: String { self == .quote ? "/zen" : "/missing" }
    var method: Moya.Method { .get }
    var task: Task { .requestPlain }
    var headers: [String: String]? { nil }
    var validationType: ValidationType { .successCodes }
    var sampleData: Data { Data("Half measures are as bad as nothing at all.".utf8) }
}

@Test func quoteIsMappedAndMissingFails() async throws {
    let provider = MoyaProvider<Zen>(
        endpointClosure: { target in
            let endpoint = MoyaProvider.defaultEndpointMapping(for: target)
            guard target == .missing else { return endpoint }
            return Endpoint(
                url: endpoint.url, sampleResponseClosure: { .networkResponse(404, Data()) },
                method: endpoint.method, task: endpoint.task, httpHeaderFields: endpoint.httpHeaderFields)
        }, stubClosure: MoyaProvider.immediatelyStub)

    let quote = try await provider.response(.quote).mapString()
    #expect(quote == "Half measures are as bad as nothing at all.")

    let result = await provider.request(.missing)
    guard case .failure(let error) = result else {
        Issue.record("expected a failure")
        return
    }
    #expect(error.response?.statusCode == 404)
}
