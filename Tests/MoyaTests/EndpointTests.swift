import Foundation
import HTTPClientCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct GitIssue: Codable, Equatable {
    let title: String
    let createdAt: Date?
    let rating: Float?
}

@Suite struct EndpointTests {
    func endpoint(
        _ task: Moya.Task, method: Moya.Method = .get, headers: [String: String]? = ["Title": "Dominar"],
        url: String = "https://api.github.com/zen"
    ) -> Endpoint {
        Endpoint(
            url: url, sampleResponseClosure: { .networkResponse(200, Data()) }, method: method, task: task,
            httpHeaderFields: headers)
    }

    @Test func requestPlain() throws {
        let request = try endpoint(.requestPlain).urlRequest()
        #expect(request.url?.absoluteString == "https://api.github.com/zen")
        #expect(request.httpMethod == "GET")
        #expect(request.httpBody == nil)
        #expect(request.allHTTPHeaderFields?["Title"] == "Dominar")
    }

    @Test func transportRequestSplitsAURLOnAKnownOriginAndParsesOthers() throws {
        let origin = HTTPOrigin(scheme: "https", host: "api.github.com", port: 443)
        let known = KnownOrigin(origin)
        let split = try #require(
            endpoint(.requestPlain, url: "https://api.github.com/zen?x=1").transportRequest(knownOrigin: known)
        ).get()
        #expect(split.http.origin == origin && split.http.target == "/zen?x=1")
        #expect(split.http.headers.first(name: "Title") == "Dominar")
        // Not the known origin followed by a path: parsed as any URL (another port, a longer host, a fragment).
        for url in [
            "https://api.github.com:8443/zen", "https://api.github.com.evil/zen", "https://api.github.com/zen#top",
            "http://api.github.com/zen"
        ] {
            let parsed = try #require(endpoint(.requestPlain, url: url).transportRequest(knownOrigin: known)).get()
            let expected = try HTTPClientRequest(url: url)
            #expect(parsed.http.origin == expected.origin && parsed.http.target == expected.target, "\(url)")
        }
        let broken = endpoint(.requestPlain, url: "ftp://api.github.com/zen").transportRequest(knownOrigin: known)
        guard case .failure(.requestMapping)? = broken else {
            Issue.record("expected a mapping failure, got \(String(describing: broken))")
            return
        }
    }

    @Test func anEndpointKeptAsOriginAndTargetActsAsItsWholeURL() throws {
        func split(_ origin: String, _ target: String) -> Endpoint {
            Endpoint(
                origin: origin, target: target, sampleResponseClosure: { .networkResponse(200, Data()) }, method: .get,
                task: .requestPlain, httpHeaderFields: ["Title": "Dominar"])
        }
        let endpoint = split("https://api.github.com", "/zen?x=1")
        #expect(endpoint.url == "https://api.github.com/zen?x=1")
        #expect(endpoint == self.endpoint(.requestPlain, url: "https://api.github.com/zen?x=1"))
        #expect(endpoint.adding(newHTTPHeaderFields: ["A": "b"]).url == endpoint.url)
        #expect(endpoint.replacing(task: .requestData(Data([1]))).url == endpoint.url)
        #expect(try endpoint.urlRequest().url?.absoluteString == "https://api.github.com/zen?x=1")
        let origin = HTTPOrigin(scheme: "https", host: "api.github.com", port: 443)
        let known = KnownOrigin(origin)
        let sent = try #require(endpoint.transportRequest(knownOrigin: known)).get()
        #expect(sent.http.origin == origin && sent.http.target == "/zen?x=1")
        // Another origin, or a target that is not origin form, goes through the whole URL as any endpoint's does.
        for (origin, target) in [
            ("https://api.github.com:8443", "/zen"), ("https://api.github.com", "/zen#top"),
            ("https://api.github", ".com/zen")
        ] {
            let parsed = try #require(split(origin, target).transportRequest(knownOrigin: known)).get()
            let expected = try HTTPClientRequest(url: origin + target)
            #expect(
                parsed.http.origin == expected.origin && parsed.http.target == expected.target, "\(origin + target)")
        }
    }

    @Test func requestData() throws {
        let request = try endpoint(.requestData(Data("test data".utf8)), method: .post).urlRequest()
        #expect(request.httpBody?.utf8String == "test data")
        #expect(request.httpMethod == "POST")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == nil)
    }

    @Test func requestJSONEncodable() throws {
        let issue = GitIssue(title: "Hello", createdAt: nil, rating: 0)
        let request = try endpoint(.requestJSONEncodable(issue), method: .post).urlRequest()
        #expect(request.httpBody?.utf8String == #"{"rating":0,"title":"Hello"}"#)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        let custom = try endpoint(.requestJSONEncodable(issue), method: .post, headers: ["Content-Type": "text/x"])
            .urlRequest()
        #expect(custom.value(forHTTPHeaderField: "Content-Type") == "text/x")
    }

    @Test func requestCustomJSONEncodable() throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        let issue = GitIssue(title: "T", createdAt: Date(timeIntervalSince1970: 0), rating: nil)
        encoder.dateEncodingStrategy = .secondsSince1970
        let request = try endpoint(.requestCustomJSONEncodable(issue, encoder: encoder), method: .post).urlRequest()
        #expect(request.httpBody?.utf8String == #"{"created_at":0,"title":"T"}"#)
    }

    @Test func encodableFailureIsEncodableMapping() {
        struct Failing: Encodable { func encode(to encoder: Encoder) throws { throw CocoaError(.coderInvalidValue) } }
        #expect {
            try endpoint(.requestJSONEncodable(Failing())).urlRequest()
        } throws: { error in
            if case MoyaError.encodableMapping = error { return true }
            return false
        }
    }

    @Test func requestParameters() throws {
        let request = try endpoint(.requestParameters(parameters: ["Nemesis": "Harvey"], encoding: URLEncoding.default))
            .urlRequest()
        #expect(request.url?.absoluteString == "https://api.github.com/zen?Nemesis=Harvey")
        let json = try endpoint(.requestParameters(parameters: ["a": 1], encoding: JSONEncoding.default), method: .post)
            .urlRequest()
        #expect(json.httpBody?.utf8String == #"{"a":1}"#)
    }

    @Test func parameterEncodingFailure() {
        #expect {
            try endpoint(.requestParameters(parameters: ["a": Date()], encoding: JSONEncoding.default)).urlRequest()
        } throws: { error in
            if case MoyaError.parameterEncoding = error { return true }
            return false
        }
    }

    @Test func requestCompositeData() throws {
        let request = try endpoint(
            .requestCompositeData(bodyData: Data("test data".utf8), urlParameters: ["Nemesis": "Harvey"]), method: .post
        ).urlRequest()
        #expect(request.url?.absoluteString == "https://api.github.com/zen?Nemesis=Harvey")
        #expect(request.httpBody?.utf8String == "test data")
    }

    @Test func requestCompositeParameters() throws {
        let request = try endpoint(
            .requestCompositeParameters(
                bodyParameters: ["Dominar": "Rygel"], bodyEncoding: JSONEncoding.default,
                urlParameters: ["Harvey": "Nemesis"]), method: .post
        ).urlRequest()
        #expect(request.url?.absoluteString == "https://api.github.com/zen?Harvey=Nemesis")
        #expect(request.httpBody?.utf8String == #"{"Dominar":"Rygel"}"#)
        let form = try endpoint(
            .requestCompositeParameters(
                bodyParameters: ["a": "b"], bodyEncoding: URLEncoding.httpBody,
                urlParameters: ["c": "d"]), method: .post
        ).urlRequest()
        #expect(form.httpBody?.utf8String == "a=b")
        #expect(form.url?.query == "c=d")
    }

    @Test func compositeParametersWithQueryBodyEncodingThrowsInsteadOfCrashing() {
        #expect {
            try endpoint(
                .requestCompositeParameters(
                    bodyParameters: ["a": "b"], bodyEncoding: URLEncoding.queryString, urlParameters: [:])
            ).urlRequest()
        } throws: { error in
            if case MoyaError.parameterEncoding(let inner) = error {
                return (inner as? MoyaRequestError) == .compositeBodyEncodingNotHTTPBody
            }
            return false
        }
    }

    @Test func uploadAndDownloadTasks() throws {
        let file = URL(fileURLWithPath: "/tmp/x.txt")
        #expect(try endpoint(.uploadFile(file), method: .post).urlRequest().httpBody == nil)
        let form: MultipartFormData = [MultipartFormBodyPart(provider: .data(Data("a".utf8)), name: "a")]
        #expect(try endpoint(.uploadMultipartFormData(form), method: .post).urlRequest().url?.query == nil)
        let composite = try endpoint(.uploadCompositeMultipartFormData(form, urlParameters: ["k": "v"]), method: .post)
            .urlRequest()
        #expect(composite.url?.query == "k=v")
        let destination: DownloadDestination = { temp, _ in (temp, []) }
        #expect(try endpoint(.downloadDestination(destination)).urlRequest().url?.query == nil)
        let download = try endpoint(
            .downloadParameters(parameters: ["p": 1], encoding: URLEncoding.default, destination: destination)
        ).urlRequest()
        #expect(download.url?.query == "p=1")
    }

    @Test @available(*, deprecated) func deprecatedMultipartCases() throws {
        let parts = [MultipartFormBodyPart(provider: .data(Data("a".utf8)), name: "a")]
        let plain = endpoint(.uploadMultipart(parts), method: .post)
        #expect(try plain.urlRequest().url?.query == nil)
        #expect(plain.task.multipartFormData?.parts == parts)
        let composite = endpoint(.uploadCompositeMultipart(parts, urlParameters: ["k": "v"]), method: .post)
        #expect(try composite.urlRequest().url?.query == "k=v")
        #expect(composite.task.multipartFormData?.parts == parts)
    }

    @Test func invalidURLIsRequestMapping() {
        #expect {
            try endpoint(.requestPlain, url: "some invalid URL").urlRequest()
        } throws: { error in
            if case MoyaError.requestMapping(let url) = error { return url == "some invalid URL" }
            return false
        }
    }

    @Test func addingHeaders() {
        let base = endpoint(.requestPlain)
        #expect(
            base.adding(newHTTPHeaderFields: ["Title": "New", "Other": "x"]).httpHeaderFields == [
                "Title": "New", "Other": "x"
            ])
        #expect(base.adding(newHTTPHeaderFields: [:]).httpHeaderFields == ["Title": "Dominar"])
        #expect(endpoint(.requestPlain, headers: nil).adding(newHTTPHeaderFields: [:]).httpHeaderFields == nil)
    }

    @Test func replacingTask() throws {
        let replaced = endpoint(.requestPlain).replacing(task: .requestData(Data("x".utf8)))
        #expect(try replaced.urlRequest().httpBody?.utf8String == "x")
        #expect(replaced.url == "https://api.github.com/zen")
    }

    @Test func equalityComparesURLMethodHeadersAndBody() {
        #expect(endpoint(.requestPlain) == endpoint(.requestPlain))
        #expect(endpoint(.requestData(Data("test".utf8))) != endpoint(.requestData(Data("test1".utf8))))
        #expect(endpoint(.requestPlain, headers: ["A": "1"]) != endpoint(.requestPlain, headers: ["A": "2"]))
        #expect(endpoint(.requestPlain, headers: ["a": "1"]) == endpoint(.requestPlain, headers: ["A": "1"]))
        #expect(endpoint(.requestPlain, method: .get) != endpoint(.requestPlain, method: .post))
        #expect(
            endpoint(.requestParameters(parameters: ["a": 1], encoding: URLEncoding.default))
                != endpoint(.requestParameters(parameters: ["a": 2], encoding: URLEncoding.default)))
        #expect(endpoint(.requestPlain) != endpoint(.requestPlain, url: "https://api.github.com/other"))
    }

    @Test func jsonBodiesAreDeterministic() {
        let params: [String: Any] = ["z": 1, "a": ["m": 2, "b": [1, 2]], "k": "v", "q": true, "e": NSNull()]
        let lhs = endpoint(.requestParameters(parameters: params, encoding: JSONEncoding.default), method: .post)
        let rhs = endpoint(.requestParameters(parameters: params, encoding: JSONEncoding.default), method: .post)
        #expect(lhs == rhs)
        #expect(lhs.hashValue == rhs.hashValue)
        let issue = GitIssue(title: "t", createdAt: nil, rating: 1)
        #expect(endpoint(.requestJSONEncodable(issue)) == endpoint(.requestJSONEncodable(issue)))
        let snake = JSONEncoder()
        snake.keyEncodingStrategy = .convertToSnakeCase
        struct Camel: Encodable { let someKey = 1 }
        #expect(
            endpoint(.requestCustomJSONEncodable(Camel(), encoder: snake)) != endpoint(.requestJSONEncodable(Camel())))
    }

    @Test func hashingMatchesEquality() {
        let set: Set<Endpoint> = [
            endpoint(.requestPlain), endpoint(.requestPlain), endpoint(.requestData(Data("x".utf8)))
        ]
        #expect(set.count == 2)
    }

    @Test func downloadDestinationsAreIgnoredButKindIsNot() {
        let a: DownloadDestination = { _, _ in (URL(fileURLWithPath: "/a"), []) }
        let b: DownloadDestination = { _, _ in (URL(fileURLWithPath: "/b"), []) }
        #expect(endpoint(.downloadDestination(a)) == endpoint(.downloadDestination(b)))
        #expect(endpoint(.downloadDestination(a)) != endpoint(.requestPlain))
    }

    @Test func uploadPayloadsAreCompared() {
        #expect(endpoint(.uploadFile(URL(fileURLWithPath: "/a"))) == endpoint(.uploadFile(URL(fileURLWithPath: "/a"))))
        #expect(endpoint(.uploadFile(URL(fileURLWithPath: "/a"))) != endpoint(.uploadFile(URL(fileURLWithPath: "/b"))))
        let formA: MultipartFormData = [MultipartFormBodyPart(provider: .data(Data("a".utf8)), name: "a")]
        let formB: MultipartFormData = [MultipartFormBodyPart(provider: .data(Data("b".utf8)), name: "a")]
        #expect(
            endpoint(.uploadMultipartFormData(formA), method: .post)
                == endpoint(.uploadMultipartFormData(formA), method: .post))
        #expect(
            endpoint(.uploadMultipartFormData(formA), method: .post)
                != endpoint(.uploadMultipartFormData(formB), method: .post))
        #expect(
            endpoint(.uploadCompositeMultipartFormData(formA, urlParameters: ["a": 1]), method: .post)
                != endpoint(.uploadCompositeMultipartFormData(formA, urlParameters: ["a": 2]), method: .post))
    }

    @Test func failingEndpointsCompare() {
        #expect(endpoint(.requestPlain, url: "bad url") == endpoint(.requestPlain, url: "bad url"))
        #expect(endpoint(.requestPlain, url: "bad url") != endpoint(.requestPlain))
    }
}

@Suite struct URLMoyaTests {
    struct PathTarget: TargetType {
        var baseURL: URL
        var path: String
        var method: Moya.Method { .get }
        var task: Moya.Task { .requestPlain }
        var headers: [String: String]? { nil }
    }

    @Test func emptyPathKeepsBaseURL() {
        #expect(
            URL(target: PathTarget(baseURL: URL(string: "https://a.com/api?x=1")!, path: "")).absoluteString
                == "https://a.com/api?x=1")
    }

    @Test func appendsPath() {
        #expect(
            URL(target: PathTarget(baseURL: URL(string: "https://a.com/api")!, path: "/users")).absoluteString
                == "https://a.com/api/users")
        #expect(
            URL(target: PathTarget(baseURL: URL(string: "https://a.com")!, path: "/a?b=c")).absoluteString
                == "https://a.com/a%3Fb=c")
    }

    @Test func defaultEndpointMapping() throws {
        let endpoint = MoyaProvider<GitHub>.defaultEndpointMapping(for: .zen)
        #expect(endpoint.url == "https://api.github.com/zen")
        #expect(endpoint.method == .get)
        if case .networkResponse(let code, let data) = endpoint.sampleResponseClosure() {
            #expect(code == 200)
            #expect(data == GitHub.zen.sampleData)
        } else {
            Issue.record("expected networkResponse")
        }
    }
}
