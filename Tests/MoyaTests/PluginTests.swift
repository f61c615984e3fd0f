import Foundation
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct AccessTokenPluginTests {
    let plugin = AccessTokenPlugin { _ in "eyeAmAToken" }
    let request = URLRequest(url: URL(string: "https://example.com")!)

    @Test func bearerBasicCustomAndNone() {
        #expect(
            plugin.prepare(request, target: TestTarget(authorizationType: .bearer)).value(
                forHTTPHeaderField: "Authorization") == "Bearer eyeAmAToken")
        #expect(
            plugin.prepare(request, target: TestTarget(authorizationType: .basic)).value(
                forHTTPHeaderField: "Authorization") == "Basic eyeAmAToken")
        #expect(
            plugin.prepare(request, target: TestTarget(authorizationType: .custom("CustomAuth"))).value(
                forHTTPHeaderField: "Authorization") == "CustomAuth eyeAmAToken")
        #expect(
            plugin.prepare(request, target: TestTarget(authorizationType: nil)).value(
                forHTTPHeaderField: "Authorization") == nil)
        #expect(plugin.prepare(request, target: GitHub.zen).value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func multiTargetUnwrapsForTokenClosure() {
        let seen = Recorder<String>()
        let plugin = AccessTokenPlugin { target in
            seen.append(target is TestTarget ? "inner" : "outer")
            return "t"
        }
        let prepared = plugin.prepare(request, target: MultiTarget(TestTarget(authorizationType: .bearer)))
        #expect(prepared.value(forHTTPHeaderField: "Authorization") == "Bearer t")
        #expect(seen.values == ["inner"])
    }

    @Test func existingHeaderIsCommaJoined() {
        var request = self.request
        request.setValue("Old", forHTTPHeaderField: "Authorization")
        #expect(
            plugin.prepare(request, target: TestTarget(authorizationType: .bearer)).value(
                forHTTPHeaderField: "Authorization") == "Old,Bearer eyeAmAToken")
    }

    @Test func authorizationTypeValues() {
        #expect(AuthorizationType.basic.value == "Basic")
        #expect(AuthorizationType.bearer.value == "Bearer")
        #expect(AuthorizationType.custom("X").value == "X")
    }

    @Test func throughProvider() throws {
        let provider = MoyaProvider<TestTarget>(stubClosure: MoyaProvider.immediatelyStub, plugins: [plugin])
        var result: Result<Response, MoyaError>?
        provider.request(TestTarget(authorizationType: .bearer)) { result = $0 }
        #expect(try result?.get().request?.value(forHTTPHeaderField: "Authorization") == "Bearer eyeAmAToken")
    }
}

@Suite struct CredentialsPluginTests {
    let request = URLRequest(url: URL(string: "https://example.com")!)

    @Test func preemptiveBasicHeader() {
        let plugin = CredentialsPlugin(preemptive: true) { _ in
            URLCredential(user: "user", password: "pass", persistence: .none)
        }
        #expect(
            plugin.prepare(request, target: GitHub.zen).value(forHTTPHeaderField: "Authorization")
                == "Basic dXNlcjpwYXNz")
    }

    @Test func notPreemptiveByDefault() {
        let plugin = CredentialsPlugin { _ in URLCredential(user: "user", password: "pass", persistence: .none) }
        #expect(plugin.prepare(request, target: GitHub.zen).value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func willSendAuthenticatesTheRequest() {
        let plugin = CredentialsPlugin { _ in URLCredential(user: "u", password: "p", persistence: .none) }
        let wrapper = RequestTypeWrapper(request: request, sessionHeaders: [:])
        plugin.willSend(wrapper, target: GitHub.zen)
        #expect(wrapper.credential?.user == "u")
        #expect(wrapper.cURLDescription().contains("-u u:p"))
    }
}

@Suite struct NetworkActivityPluginTests {
    @Test func beganAndEnded() {
        let changes = Recorder<NetworkActivityChangeType>()
        let provider = MoyaProvider<GitHub>(
            stubClosure: MoyaProvider.immediatelyStub,
            plugins: [NetworkActivityPlugin { change, _ in changes.append(change) }])
        provider.request(.zen) { _ in }
        #expect(changes.values == [.began, .ended])
    }
}

@Suite struct NetworkLoggerPluginTests {
    let entries = Recorder<String>()

    func logger(_ options: NetworkLoggerPlugin.Configuration.LogOptions, redacted: Set<String> = [])
        -> NetworkLoggerPlugin
    {
        let entries = self.entries
        let formatter = NetworkLoggerPlugin.Configuration.Formatter(entry: { identifier, message, _ in
            "\(identifier): \(message)"
        })
        return NetworkLoggerPlugin(
            configuration: .init(
                formatter: formatter, output: { _, items in items.forEach(entries.append) },
                logOptions: options, redactedHeaders: redacted))
    }

    func request(body: String? = nil) -> URLRequest {
        var request = URLRequest(url: URL(string: "https://api.github.com/zen")!)
        request.httpMethod = "GET"
        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        request.httpBody = body.map { Data($0.utf8) }
        return request
    }

    @Test func defaultRequestEntries() {
        let wrapper = RequestTypeWrapper(request: request(), sessionHeaders: ["Accept-Language": "en;q=1.0"])
        logger(.default).willSend(wrapper, target: GitHub.zen)
        let values = entries.values
        #expect(values.count == 3)
        #expect(values[0] == "Request: https://api.github.com/zen")
        #expect(values[1].hasPrefix("Request Headers: ["))
        #expect(values[1].contains("\"Authorization\": \"Bearer secret\""))
        #expect(values[1].contains("\"Accept-Language\": \"en;q=1.0\""))
        #expect(values[2] == "HTTP Request Method: GET")
    }

    @Test func redaction() {
        let wrapper = RequestTypeWrapper(request: request(), sessionHeaders: [:])
        logger(.default, redacted: ["authorization"]).willSend(wrapper, target: GitHub.zen)
        #expect(entries.values[1] == "Request Headers: [\"Authorization\": \"[REDACTED]\"]")
        #expect(!entries.values.joined().contains("secret"))
    }

    @Test func verboseBody() {
        let wrapper = RequestTypeWrapper(request: request(body: "cool body"), sessionHeaders: [:])
        logger(.verbose).willSend(wrapper, target: GitHub.zen)
        #expect(entries.values.contains("Request Body: cool body"))
        #expect(entries.values.last == "HTTP Request Method: GET")
    }

    @Test func invalidRequest() {
        logger(.default).willSend(RequestTypeWrapper(request: nil, sessionHeaders: [:]), target: GitHub.zen)
        #expect(entries.values == ["Request: (invalid request)"])
    }

    @Test func cURL() {
        let wrapper = RequestTypeWrapper(request: request(body: #"{"a":"b"}"#), sessionHeaders: ["User-Agent": "UA"])
        logger(.formatRequestAscURL).willSend(wrapper, target: GitHub.zen)
        let expected =
            "Request: $ curl -v \\\n\t-X GET \\\n\t-H \"User-Agent: UA\" \\\n\t-H \"Authorization: Bearer secret\" \\\n\t-d \"{\\\"a\\\":\\\"b\\\"}\" \\\n\t\"https://api.github.com/zen\""
        #expect(entries.values == [expected])
    }

    @Test func cURLRedacted() {
        let wrapper = RequestTypeWrapper(request: request(), sessionHeaders: [:])
        wrapper.authenticate(username: "u", password: "pw")
        logger(.formatRequestAscURL, redacted: NetworkLoggerPlugin.Configuration.sensitiveHeaders).willSend(
            wrapper, target: GitHub.zen)
        #expect(entries.values.first?.contains("-u [REDACTED]") == true)
        #expect(entries.values.first?.contains("Authorization: [REDACTED]") == true)
        #expect(entries.values.first?.contains("pw") == false)
    }

    @Test func stubResponseEntries() {
        logger(.verbose).didReceive(.success(Response(statusCode: 200, data: Data("body".utf8))), target: GitHub.zen)
        #expect(entries.values == ["Response: Received empty network response for zen.", "Response Body: body"])
    }

    @Test func httpResponseEntry() {
        let http = HTTPURLResponse(
            url: URL(string: "https://api.github.com/zen")!, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFields: ["Content-Length": "3", "Set-Cookie": "s=1"])!
        logger(.default, redacted: ["set-cookie"]).didReceive(
            .success(Response(statusCode: 200, data: Data(), response: http)), target: GitHub.zen)
        let entry = entries.values.first ?? ""
        #expect(entry.contains("{ URL: https://api.github.com/zen }"))
        #expect(entry.lowercased().contains("{ status code: 200, headers"))
        #expect(entry.contains("\"Content-Length\" = 3;"))
        #expect(entry.contains("\"Set-Cookie\" = [REDACTED];"))
        #expect(entries.values.count == 1)
    }

    @Test func errorEntries() {
        let error = MoyaError.underlying(NSError(domain: "d", code: 1), nil)
        logger(.default).didReceive(.failure(error), target: GitHub.zen)
        #expect(entries.values.count == 1)
        #expect(entries.values[0].hasPrefix("Error: Error calling zen : "))
        let withResponse = MoyaError.statusCode(Response(statusCode: 500, data: Data("oops".utf8)))
        logger([.errorResponseBody]).didReceive(.failure(withResponse), target: GitHub.zen)
        #expect(
            entries.values.suffix(2) == ["Response: Received empty network response for zen.", "Response Body: oops"])
    }

    @Test func defaultFormatterPrefix() {
        let entry = NetworkLoggerPlugin.Configuration.Formatter.defaultEntryFormatter(
            identifier: "Request", message: "m", target: GitHub.zen)
        #expect(entry.hasPrefix("Moya_Logger: ["))
        #expect(entry.hasSuffix("] Request: m"))
        #expect(
            NetworkLoggerPlugin.Configuration.Formatter.defaultDataFormatter(Data([0xff]))
                == "## Cannot map data to String ##")
    }

    @Test func logOptions() {
        typealias O = NetworkLoggerPlugin.Configuration.LogOptions
        #expect(O.default == [.requestMethod, .requestHeaders])
        #expect(O.verbose == [.requestMethod, .requestHeaders, .requestBody, .successResponseBody, .errorResponseBody])
        #expect(!O.verbose.contains(.formatRequestAscURL))
        #expect(O.formatRequestAscURL.rawValue == 8)
        #expect(NetworkLoggerPlugin.verbose.configuration.logOptions == .verbose)
    }

    @Test func stubbedRequestsShowSessionHeaders() {
        let provider = MoyaProvider<GitHub>(stubClosure: MoyaProvider.immediatelyStub, plugins: [logger(.default)])
        provider.request(.zen) { _ in }
        let headers = entries.values.first { $0.hasPrefix("Request Headers") } ?? ""
        #expect(headers.contains("User-Agent"))
        #expect(headers.contains("Accept-Encoding"))
        #expect(headers.contains("Accept-Language"))
    }
}
