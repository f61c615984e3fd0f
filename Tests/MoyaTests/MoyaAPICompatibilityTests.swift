import Foundation
import Moya
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Moya's public API used the way its README and docs (Targets, Endpoints, Providers, Plugins, Authentication,
// Threading, Examples) use it, with a plain `import Moya`: this file compiling is the check that the names,
// labels and defaults of moya-api.md §2 are public. The tests run the snippets on stubs.

private enum MyService {
    case zen
    case showUser(id: Int)
    case createUser(firstName: String, lastName: String)
    case updateUser(id: Int, firstName: String, lastName: String)
    case upload(Data)
    case download
}

extension MyService: TargetType {
    var baseURL: URL { URL(string: "https://api.myservice.com")! }
    var path: String {
        switch self {
        case .zen: return "/zen"
        case .showUser(let id), .updateUser(let id, _, _): return "/users/\(id)"
        case .createUser: return "/users"
        case .upload: return "/upload"
        case .download: return "/file"
        }
    }
    var method: Moya.Method {
        switch self {
        case .zen, .showUser, .download: return .get
        case .createUser, .updateUser, .upload: return .post
        }
    }
    var task: Task {
        switch self {
        case .zen, .showUser: return .requestPlain
        case .updateUser(_, let firstName, let lastName):
            return .requestParameters(
                parameters: ["first_name": firstName, "last_name": lastName], encoding: URLEncoding.queryString)
        case .createUser(let firstName, let lastName):
            return .requestParameters(
                parameters: ["first_name": firstName, "last_name": lastName], encoding: JSONEncoding.default)
        case .upload(let data):
            return .uploadMultipartFormData([
                MultipartFormBodyPart(provider: .data(data), name: "file", fileName: "f.png", mimeType: "image/png")
            ])
        case .download:
            return .downloadDestination(
                DownloadRequest.suggestedDownloadDestination(for: .cachesDirectory, options: [.removePreviousFile]))
        }
    }
    var sampleData: Data {
        switch self {
        case .zen: return Data("Half measures are as bad as nothing at all.".utf8)
        case .showUser(let id): return Data("{\"id\": \(id), \"first_name\": \"Harry\"}".utf8)
        default: return Data()
        }
    }
    var headers: [String: String]? { ["Content-type": "application/json"] }
}

extension MyService: AccessTokenAuthorizable {
    var authorizationType: AuthorizationType? {
        switch self {
        case .zen: return nil
        case .showUser: return .bearer
        default: return .custom("Token")
        }
    }
}

private struct User: Decodable, Equatable {
    let id: Int
    let firstName: String
    enum CodingKeys: String, CodingKey {
        case id
        case firstName = "first_name"
    }
}

/// A custom plugin as in docs/Plugins.md.
private struct AuthPlugin: PluginType {
    let token: String
    func prepare(_ request: URLRequest, target: TargetType) -> URLRequest {
        var request = request
        request.addValue("Bearer " + token, forHTTPHeaderField: "Authorization")
        return request
    }
}

/// A custom encoding as users write them (moya-api.md §2.3).
private struct PlainEncoding: ParameterEncoding {
    func encode(_ urlRequest: URLRequestConvertible, with parameters: Parameters?) throws -> URLRequest {
        var request = try urlRequest.asURLRequest()
        request.httpBody = Data((parameters ?? [:]).keys.sorted().joined(separator: ",").utf8)
        return request
    }
}

@Suite struct MoyaAPICompatibilityTests {

    @Test func readmeProviderAndResponseMapping() throws {
        let provider = MoyaProvider<MyService>(stubClosure: MoyaProvider.immediatelyStub)
        var statusCode: Int?
        var user: User?
        let cancellable: Cancellable = provider.request(.showUser(id: 7)) { result in
            switch result {
            case .success(let moyaResponse):
                statusCode = moyaResponse.statusCode
                user = try? moyaResponse.filterSuccessfulStatusCodes().map(User.self)
            case .failure(let error):
                Issue.record("\(error.localizedDescription) \(String(describing: error.response))")
            }
        }
        #expect(statusCode == 200)
        #expect(user == User(id: 7, firstName: "Harry"))
        #expect(!cancellable.isCancelled)

        provider.request(.zen, callbackQueue: nil, progress: { (progress: ProgressResponse) in _ = progress.progress })
        { result in
            #expect((try? result.get().mapString()) == "Half measures are as bad as nothing at all.")
        }
    }

    @Test func endpointAndRequestClosures() throws {
        let endpointClosure = { (target: MyService) -> Endpoint in
            let defaultEndpoint = MoyaProvider.defaultEndpointMapping(for: target)
            return defaultEndpoint.adding(newHTTPHeaderFields: ["APP_NAME": "MY_AWESOME_APP"])
        }
        let customEndpointClosure = { (target: MyService) -> Endpoint in
            Endpoint(
                url: URL(target: target).absoluteString,
                sampleResponseClosure: { .networkResponse(201, target.sampleData) },
                method: target.method, task: target.task, httpHeaderFields: target.headers)
        }
        let requestClosure = { (endpoint: Endpoint, done: MoyaProvider<MyService>.RequestResultClosure) in
            do {
                var request = try endpoint.urlRequest()
                request.httpShouldHandleCookies = false
                done(.success(request))
            } catch {
                done(.failure(MoyaError.underlying(error, nil)))
            }
        }
        let provider = MoyaProvider<MyService>(
            endpointClosure: endpointClosure, requestClosure: requestClosure,
            stubClosure: MoyaProvider.immediatelyStub)
        var sentHeaders: [String: String]?
        provider.request(.zen) { result in sentHeaders = try? result.get().request?.allHTTPHeaderFields }
        #expect(sentHeaders?["APP_NAME"] == "MY_AWESOME_APP")

        let custom = MoyaProvider<MyService>(
            endpointClosure: customEndpointClosure, stubClosure: MoyaProvider.immediatelyStub)
        var code: Int?
        custom.request(.zen) { code = try? $0.get().statusCode }
        #expect(code == 201)

        let errorEndpoint = { (target: MyService) -> Endpoint in
            Endpoint(
                url: URL(target: target).absoluteString,
                sampleResponseClosure: { .networkError(NSError(domain: "x", code: 1)) },
                method: target.method, task: target.task, httpHeaderFields: target.headers)
        }
        var failed = false
        MoyaProvider<MyService>(endpointClosure: errorEndpoint, stubClosure: MoyaProvider.immediatelyStub).request(.zen)
        { result in
            if case .failure(.underlying(let error as NSError, nil)) = result { failed = error.domain == "x" }
        }
        #expect(failed)

        let encoded = try Endpoint(
            url: "https://a/b", sampleResponseClosure: { .networkResponse(200, Data()) }, method: .post,
            task: .requestParameters(parameters: ["b": 1, "a": 2], encoding: PlainEncoding()),
            httpHeaderFields: nil
        ).urlRequest()
        #expect(encoded.httpBody == Data("a,b".utf8))
    }

    @Test func providerOptionsPluginsAndSessions() async throws {
        let configuration = URLSessionConfiguration.default
        configuration.httpAdditionalHeaders = ["X-Session": "s"]
        let session = Session(configuration: configuration, startRequestsImmediately: false)
        #expect(session.headers == ["X-Session": "s"])
        #expect(session.sessionConfiguration.httpAdditionalHeaders?["X-Session"] as? String == "s")
        #expect(MoyaProvider<MyService>.defaultAlamofireSession().startRequestsImmediately == false)

        let logLines = LockedLines()
        let plugins: [PluginType] = [
            NetworkLoggerPlugin(
                configuration: .init(output: { _, items in logLines.append(items) }, logOptions: .verbose)),
            NetworkLoggerPlugin(
                configuration: .init(
                    formatter: .init(entry: { identifier, message, _ in "\(identifier): \(message)" }),
                    logOptions: .formatRequestAscURL)),
            NetworkActivityPlugin { change, _ in _ = change == .began },
            AccessTokenPlugin { _ in "t0k3n" },
            CredentialsPlugin { _ -> URLCredential? in URLCredential(user: "user", password: "pass", persistence: .none)
            },
            AuthPlugin(token: "other")
        ]
        let customStubClosure = { (target: MyService) -> StubBehavior in
            if case .zen = target { return .delayed(seconds: 0.01) }
            return .immediate
        }
        let provider = MoyaProvider<MyService>(
            stubClosure: customStubClosure, callbackQueue: DispatchQueue.global(qos: .utility),
            session: session, plugins: plugins, trackInflights: true)
        let response = try await provider.response(.showUser(id: 1))
        #expect(response.request?.value(forHTTPHeaderField: "Authorization") == "Bearer t0k3n,Bearer other")
        #expect(logLines.count > 0)
        #expect(
            await waitUntil { provider.inflightRequests.isEmpty },
            "removed right after the completions ran (Moya calls them first)")
        #expect(try await provider.response(.zen).statusCode == 200)
        _ = MoyaProvider<MyService>(stubClosure: MoyaProvider.delayedStub(3))
        _ = MoyaProvider<MultiTarget>(plugins: [NetworkLoggerPlugin.verbose, NetworkLoggerPlugin.default])

        let multi = MoyaProvider<MultiTarget>(stubClosure: MoyaProvider.immediatelyStub)
        var zen: String?
        multi.request(MultiTarget(MyService.zen)) { zen = try? $0.get().mapString() }
        #expect(zen == "Half measures are as bad as nothing at all.")
    }

    @Test func errorsTasksAndHelpers() throws {
        let response = Response(statusCode: 404, data: Data("{\"a\": {\"b\": \"c\"}}".utf8))
        #expect(throws: MoyaError.self) { try response.filterSuccessfulStatusCodes() }
        #expect(throws: MoyaError.self) { try response.filter(statusCode: 200) }
        #expect(try response.filter(statusCodes: 400...499) === response)
        #expect(throws: MoyaError.self) { try response.filterSuccessfulStatusAndRedirectCodes() }
        #expect(try response.mapString(atKeyPath: "a.b") == "c")
        #expect(try response.mapJSON(failsOnEmptyData: false) is [String: Any])
        let error = MoyaError.statusCode(response)
        #expect(error.response === response)
        #expect(error.errorDescription == "Status code didn't fall within the given range.")
        #expect((error as NSError).userInfo[NSLocalizedDescriptionKey] as? String == error.errorDescription)

        let tasks: [Task] = [
            .requestPlain, .requestData(Data()), .requestJSONEncodable(["a": 1]),
            .requestCustomJSONEncodable(["a": 1], encoder: JSONEncoder()),
            .requestParameters(
                parameters: [:],
                encoding: URLEncoding(destination: .httpBody, arrayEncoding: .noBrackets, boolEncoding: .literal)),
            .requestCompositeData(bodyData: Data(), urlParameters: [:]),
            .requestCompositeParameters(
                bodyParameters: [:], bodyEncoding: JSONEncoding.prettyPrinted, urlParameters: [:]),
            .uploadFile(URL(fileURLWithPath: "/tmp/f")),
            .uploadMultipartFormData(MultipartFormData(parts: [])),
            .uploadCompositeMultipartFormData(
                MultipartFormData(fileManager: .default, boundary: "b", parts: []), urlParameters: [:]),
            .downloadDestination { url, _ in (url, [.createIntermediateDirectories]) },
            .downloadParameters(parameters: [:], encoding: URLEncoding.default, destination: { url, _ in (url, []) })
        ]
        #expect(tasks.count == 12)
        #expect(Moya.Method.post.supportsMultipart && !Moya.Method.get.supportsMultipart)
        #expect(ValidationType.successCodes != .customCodes([200]))
        #expect(AuthorizationType.custom("Token").value == "Token")
        #expect(CancellableToken {}.debugDescription == "Empty Request")
        #expect(ProgressResponse(progress: nil, response: response).progress == 1.0)
        if case .success(let converted) = convertResponseToResult(
            HTTPURLResponse(url: URL(string: "https://a")!, statusCode: 204, httpVersion: nil, headerFields: nil),
            request: nil, data: nil, error: nil)
        {
            #expect(converted.statusCode == 204)
        } else {
            Issue.record("expected a success")
        }
        let redirects: [Redirector] = [.follow, .doNotFollow, Redirector(behavior: .modify { request, _ in request })]
        #expect(redirects.count == 3)
        let download: DownloadDestination = DownloadRequest.suggestedDownloadDestination()
        _ = download
        let _: RequestMultipartFormData = RequestMultipartFormData(fileManager: .default, boundary: "b")
        let _: AsyncTask<Void, Never>? = nil
    }
}

/// Collects logger output from any thread.
private final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ items: [String]) { lock.withLock { lines.append(contentsOf: items) } }
    var count: Int { lock.withLock { lines.count } }
}
