import Foundation
import HTTPClientCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Redirects against the loopback httpbin: what is followed, how methods, bodies and credentials change, the
/// limit, and the opt-out a proxy uses.
@Suite struct NetworkRedirectTests {

    /// `/redirect-to?status_code=<status>&url=<location>` with `method` and, when given, `body`.
    static func redirectTo(
        _ bin: Httpbin, _ location: String?, status: Int, method: Moya.Method = .get,
        body: Data? = nil, headers: [String: String]? = nil
    ) -> BinTarget {
        var parameters: [String: Any] = ["status_code": status]
        if let location { parameters["url"] = location }
        let task: Moya.Task =
            body.map { .requestCompositeData(bodyData: $0, urlParameters: parameters) }
            ?? .requestParameters(parameters: parameters, encoding: URLEncoding.queryString)
        return BinTarget(bin, "/redirect-to", method: method, task: task, headers: headers)
    }

    @Test func followsRelativeAndAbsoluteChains() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let response = try await provider.response(BinTarget(bin, "/redirect/3"))
            #expect(response.statusCode == 200)
            #expect(try response.map(Echo.self).path == "/get")
            #expect(["/redirect/3", "/redirect/2", "/redirect/1", "/get"].map(bin.hits) == [1, 1, 1, 1])
            #expect(response.response?.url?.absoluteString == "http://127.0.0.1:\(bin.port)/get", "the final URL")
            #expect(
                response.request?.url?.absoluteString == "http://127.0.0.1:\(bin.port)/redirect/3",
                "Response.request is the request that was sent, as Alamofire's")

            let absolute = try await provider.response(BinTarget(bin, "/absolute-redirect/2"))
            #expect(try absolute.map(Echo.self).path == "/get")
            #expect(bin.hits("/absolute-redirect/1") == 1)
            #expect(absolute.response?.url?.absoluteString == "http://127.0.0.1:\(bin.port)/get")

            // Query strings survive; an absolute-path Location replaces the path.
            let withQuery = try await provider.response(Self.redirectTo(bin, "/anything/x?a=1&b=%20", status: 302)).map(
                Echo.self)
            #expect(withQuery.target == "/anything/x?a=1&b=%20")
        }
    }

    @Test func methodAndBodyRules() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let body = Data("payload".utf8)
            // 301/302 turn POST into a bodiless GET; 303 does so for any method but GET and HEAD.
            for (status, method) in [(301, Moya.Method.post), (302, .post), (303, .post), (303, .put), (303, .delete)] {
                let echo = try await provider.response(
                    Self.redirectTo(
                        bin, "/anything/\(status)", status: status, method: method,
                        body: body, headers: ["Content-Type": "text/plain"])
                ).map(Echo.self)
                #expect(echo.method == "GET", "\(status) \(method.rawValue)")
                #expect(echo.bodyLength == 0)
                #expect(echo.contentType == nil, "the body's Content-Type goes with it")
                #expect(echo.headers["content-length"] == nil)
            }
            // 307/308 keep the method and the body; 301/302 keep methods other than POST.
            for (status, method) in [
                (307, Moya.Method.post), (308, .post), (307, .put), (308, .patch), (301, .put), (302, .delete)
            ] {
                let echo = try await provider.response(
                    Self.redirectTo(
                        bin, "/anything/\(status)", status: status, method: method,
                        body: body, headers: ["Content-Type": "text/plain"])
                ).map(Echo.self)
                #expect(echo.method == method.rawValue, "\(status) \(method.rawValue)")
                #expect(echo.body == "payload")
                #expect(echo.contentType == "text/plain")
            }
            // HEAD stays HEAD, even on 303.
            let head = try await provider.response(Self.redirectTo(bin, "/anything/head", status: 303, method: .head))
            #expect(head.statusCode == 200)
            #expect(head.data.isEmpty)
            #expect(bin.lastMethod("/anything/head") == "HEAD")
        }
    }

    @Test func uploadsAreResentOn307() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-redirect-\(UUID().uuidString).bin")
            defer { try? FileManager.default.removeItem(at: url) }
            let content = Data(Httpbin.bytes(70_001))
            try content.write(to: url)
            let parameters: [String: Any] = ["status_code": 307, "url": "/upload"]

            // A multipart form is encoded again for the second request (same boundary, same bytes).
            let form = MultipartFormData(
                boundary: "redirect.boundary",
                parts: [
                    MultipartFormBodyPart(
                        provider: .file(url), name: "file", fileName: "f.bin", mimeType: "application/octet-stream")
                ])
            let multipart = try await provider.response(
                BinTarget(
                    bin, "/redirect-to", method: .post,
                    task: .uploadCompositeMultipartFormData(form, urlParameters: parameters)))
            let sent = try #require(bin.lastBody("/upload"))
            #expect(try multipart.mapJSON() as? [String: Int] == ["bytes": sent.count])
            #expect(sent.count > 70_001)
            #expect(String(decoding: sent.prefix(19), as: UTF8.self) == "--redirect.boundary")

            // A file upload (streamed from disk; uploadFile has no URL parameters, so the endpoint carries them):
            // the 307 is followed and the file is read again.
            let uploadFile = Endpoint(
                url: "http://127.0.0.1:\(bin.port)/redirect-to?status_code=307&url=/upload",
                sampleResponseClosure: { .networkResponse(200, Data()) },
                method: .post, task: .uploadFile(url), httpHeaderFields: nil)
            let fileProvider = MoyaProvider<BinTarget>(
                endpointClosure: { _ in uploadFile },
                session: Session(client: HTTPClient(), headers: [:]))
            let streamed = try await fileProvider.response(
                BinTarget(bin, "/ignored", method: .post, task: .uploadFile(url)))
            #expect(try streamed.mapJSON() as? [String: Int] == ["bytes": 70_001])
            #expect(bin.lastBody("/upload") == [UInt8](content))
        }
    }

    @Test func credentialsStayWithinTheOrigin() async throws {
        try await withHttpbin { bin async throws in
            try await withHttpbin { other async throws in
                let provider = binProvider(
                    plugins: [AccessTokenPlugin { _ in "secret" }],
                    headers: ["X-Session": "s", "Proxy-Authorization": "Basic cHJveHk="])
                func target(_ location: String) -> BinTarget {
                    var target = Self.redirectTo(
                        bin, location, status: 302, headers: ["Cookie": "c=1", "X-Custom": "kept"])
                    target.authorizationType = .bearer
                    return target
                }
                let same = try await provider.response(target("/headers")).map(Echo.self)
                #expect(same.headers["authorization"] == "Bearer secret", "same origin: credentials kept")
                #expect(same.headers["cookie"] == "c=1")
                #expect(same.headers["proxy-authorization"] == "Basic cHJveHk=")

                let cross = try await provider.response(target("http://127.0.0.1:\(other.port)/headers")).map(Echo.self)
                #expect(cross.headers["authorization"] == nil, "another port is another origin")
                #expect(cross.headers["cookie"] == nil)
                #expect(cross.headers["proxy-authorization"] == nil, "session headers too")
                #expect(cross.headers["x-custom"] == "kept")
                #expect(cross.headers["x-session"] == "s")

                // Once dropped, they stay dropped when the chain comes back to the first origin.
                let back = "http://127.0.0.1:\(bin.port)/headers"
                let bounce =
                    "http://127.0.0.1:\(other.port)/redirect-to?url=\(back.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
                let returned = try await provider.response(target(bounce)).map(Echo.self)
                #expect(returned.headers["authorization"] == nil)
                #expect(returned.headers["x-custom"] == "kept")
            }
        }
    }

    @Test func limitIsTwentyRedirects() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let twenty = try await provider.response(BinTarget(bin, "/redirect/20"))
            #expect(try twenty.map(Echo.self).path == "/get")

            let result = await provider.request(BinTarget(bin, "/redirect/21"))
            guard case .failure(.underlying(let error as NSError, nil)) = result else {
                Issue.record("expected too many redirects, got \(result)")
                return
            }
            #expect(error.domain == NSURLErrorDomain)
            #expect(error.code == NSURLErrorHTTPTooManyRedirects)
            #expect(result.failureDescription == "too many HTTP redirects")
            #expect(bin.hits("/get") == 1, "the 21st redirect is not followed")

            // A loop ends the same way: the first request and 20 redirects reach the server.
            let loop = await provider.request(BinTarget(bin, "/loop"))
            guard case .failure(.underlying(let loopError as NSError, nil)) = loop else {
                Issue.record("expected a failure, got \(loop)")
                return
            }
            #expect(loopError.code == NSURLErrorHTTPTooManyRedirects)
            #expect(bin.hits("/loop") == 21)
        }
    }

    @Test func unusableLocationsEndTheChain() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let missing = try await provider.response(Self.redirectTo(bin, nil, status: 302))
            #expect(missing.statusCode == 302)
            #expect(String(decoding: missing.data, as: UTF8.self) == "redirect")
            let otherScheme = try await provider.response(Self.redirectTo(bin, "ftp://127.0.0.1/file", status: 301))
            #expect(otherScheme.statusCode == 301)
            for status in [300, 304, 305] {
                #expect(try await provider.response(Self.redirectTo(bin, "/get", status: status)).statusCode == status)
            }
            #expect(bin.hits("/get") == 0)
        }
    }

    @Test func doNotFollowAndModify() async throws {
        try await withHttpbin { bin async throws in
            let passThrough = MoyaProvider<BinTarget>(
                session: Session(client: HTTPClient(), headers: [:], redirectHandler: .doNotFollow))
            let response = try await passThrough.response(BinTarget(bin, "/redirect/2"))
            #expect(response.statusCode == 302)
            #expect(response.response?.value(forHTTPHeaderField: "Location") == "1")
            #expect(response.response?.url?.path == "/redirect/2")
            #expect(bin.hits("/redirect/1") == 0)

            let seen = Recorder<String>()
            let modifying = Redirector(
                behavior: .modify { request, response in
                    seen.append("\(response.statusCode) \(request.url?.path ?? "")")
                    guard request.url?.path != "/get" else { return nil }
                    var request = request
                    request.setValue("yes", forHTTPHeaderField: "X-Redirected")
                    return request
                })
            let modified = MoyaProvider<BinTarget>(
                session: Session(client: HTTPClient(), headers: [:], redirectHandler: modifying))
            let stopped = try await modified.response(BinTarget(bin, "/redirect/2"))
            #expect(stopped.statusCode == 302, "the closure declined the last hop")
            #expect(stopped.response?.url?.path == "/redirect/1")
            #expect(seen.values == ["302 /redirect/1", "302 /get"])
            #expect(bin.lastHeaders("/redirect/1")?.first(name: "X-Redirected") == "yes")
        }
    }

    @Test func redirectedDownloadsAndValidation() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-redirect-dl-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let destination = directory.appendingPathComponent("file.bin")
            let target = BinTarget(
                bin, "/redirect-to",
                task: .downloadParameters(
                    parameters: ["url": "/bytes/3000"], encoding: URLEncoding.queryString,
                    destination: { _, _ in (destination, [.createIntermediateDirectories]) }))
            let response = try await provider.response(target)
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: destination) == Data(Httpbin.bytes(3000)))

            // Validation sees the final status, not the redirect's.
            let validated = await provider.request(BinTarget(bin, "/redirect/1", validationType: .successCodes))
            #expect(try validated.get().statusCode == 200)
        }
    }
}
