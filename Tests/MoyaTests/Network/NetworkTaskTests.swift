import Foundation
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every `Task` kind, sent by a real `MoyaProvider` to the loopback httpbin, arrives as it should.
@Suite struct NetworkTaskTests {
    struct Payload: Codable, Equatable {
        var name: String
        var count: Int
    }

    @Test func requestPlainReachesTheServer() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let echo = try await provider.request(BinTarget(bin, "/get", headers: ["X-Target": "t"])).echo()
            #expect(echo.method == "GET")
            #expect(echo.target == "/get")
            #expect(echo.bodyLength == 0)
            #expect(echo.headers["x-target"] == "t")
            #expect(echo.headers["x-session"] == "s")
            #expect(echo.headers["host"] == "127.0.0.1:\(bin.port)")
            #expect(echo.headers["content-type"] == nil)
        }
    }

    @Test func sessionHeadersYieldToTargetHeaders() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(headers: ["X-Session": "s", "User-Agent": "session-agent"])
            let echo = try await provider.request(BinTarget(bin, "/headers", headers: ["user-agent": "target-agent"]))
                .echo()
            #expect(echo.headers["user-agent"] == "target-agent")
            #expect(echo.headers["x-session"] == "s")
        }
    }

    @Test func defaultSessionSendsAlamofireDefaultHeaders() async throws {
        try await withHttpbin { bin async throws in
            let provider = MoyaProvider<BinTarget>()
            let echo = try await provider.request(BinTarget(bin, "/headers")).echo()
            #expect(echo.headers["accept-encoding"] == "gzip;q=1.0, deflate;q=0.9")
            #expect(echo.headers["user-agent"]?.hasSuffix("Moya/\(MoyaModule.compatibleMoyaVersion)") == true)
            #expect(echo.headers["accept-language"]?.isEmpty == false)
        }
    }

    @Test func requestDataSendsTheBytes() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let data = Data([0, 1, 2, 255, 13, 10])
            let result = await provider.request(BinTarget(bin, "/post", method: .post, task: .requestData(data)))
            let echo = try result.echo()
            #expect(echo.method == "POST")
            #expect(bin.lastBody("/post") == [UInt8](data))
            #expect(echo.headers["content-length"] == "6")
            #expect(echo.contentType == nil, "Moya sets no Content-Type for requestData")
        }
    }

    @Test func requestJSONEncodable() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let payload = Payload(name: "moya", count: 3)
            let echo = try await provider.request(
                BinTarget(bin, "/post", method: .post, task: .requestJSONEncodable(payload))
            ).echo()
            #expect(echo.contentType == "application/json")
            #expect(try JSONDecoder().decode(Payload.self, from: Data(echo.body.utf8)) == payload)

            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let custom = try await provider.request(
                BinTarget(
                    bin, "/post", method: .put,
                    task: .requestCustomJSONEncodable(payload, encoder: encoder))
            ).echo()
            #expect(custom.method == "PUT")
            #expect(custom.body == #"{"count":3,"name":"moya"}"#)
        }
    }

    @Test func requestParametersInTheQueryString() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let parameters: [String: Any] = ["b": "x y", "a": 1, "list": [1, 2], "flag": true]
            let echo = try await provider.request(
                BinTarget(
                    bin, "/get", task: .requestParameters(parameters: parameters, encoding: URLEncoding.queryString))
            ).echo()
            // Alamofire's encoding: keys sorted, brackets for arrays (escaped), booleans as numbers.
            #expect(echo.target == "/get?a=1&b=x%20y&flag=1&list%5B%5D=1&list%5B%5D=2")
            #expect(echo.bodyLength == 0)

            let post = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestParameters(parameters: ["q": "a&b"], encoding: URLEncoding.queryString))
            ).echo()
            #expect(post.target == "/post?q=a%26b")
            #expect(post.method == "POST")
        }
    }

    @Test func requestParametersInTheBody() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let form = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestParameters(parameters: ["b": "2", "a": "1 1"], encoding: URLEncoding.default))
            ).echo()
            #expect(form.target == "/post")
            #expect(form.body == "a=1%201&b=2")
            #expect(form.contentType == "application/x-www-form-urlencoded; charset=utf-8")

            let json = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestParameters(parameters: ["k": "v", "n": 1], encoding: JSONEncoding.default))
            ).echo()
            #expect(json.contentType == "application/json")
            let object = try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: Any]
            #expect(object?["k"] as? String == "v")
            #expect(object?["n"] as? Int == 1)

            // URLEncoding.default on GET goes to the query string.
            let get = try await provider.request(
                BinTarget(bin, "/get", task: .requestParameters(parameters: ["z": "1"], encoding: URLEncoding.default))
            ).echo()
            #expect(get.target == "/get?z=1")
        }
    }

    @Test func compositeParameters() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let echo = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestCompositeParameters(
                        bodyParameters: ["body": "yes"], bodyEncoding: JSONEncoding.default, urlParameters: ["page": 2])
                )
            ).echo()
            #expect(echo.target == "/post?page=2")
            #expect(echo.body == #"{"body":"yes"}"#)
            #expect(echo.contentType == "application/json")

            let formEcho = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestCompositeParameters(
                        bodyParameters: ["f": "1"], bodyEncoding: URLEncoding.httpBody, urlParameters: ["u": "2"]))
            ).echo()
            #expect(formEcho.target == "/post?u=2")
            #expect(formEcho.body == "f=1")

            let data = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestCompositeData(
                        bodyData: Data("raw".utf8), urlParameters: ["x": "y"]))
            ).echo()
            #expect(data.target == "/post?x=y")
            #expect(data.body == "raw")
        }
    }

    @Test func uploadFileStreamsTheFile() async throws {
        try await withHttpbin { bin async throws in
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-upload-\(UUID().uuidString).bin")
            defer { try? FileManager.default.removeItem(at: url) }
            let content = Data(Httpbin.bytes(100_003))
            try content.write(to: url)
            let provider = binProvider()
            let progress = Recorder<ProgressResponse>()
            let result = await provider.requestWithHandler(
                BinTarget(bin, "/upload", method: .post, task: .uploadFile(url)),
                progress: { progress.append($0) })
            let response = try result.get()
            #expect(try response.mapJSON() as? [String: Int] == ["bytes": 100_003])
            #expect(bin.lastBody("/upload") == [UInt8](content))
            #expect(progress.values.last?.completed == true)
            #expect(progress.values.last?.progress == 1.0)

            // A missing file fails without reaching the server.
            let missing = await provider.request(
                BinTarget(
                    bin, "/upload", method: .post,
                    task: .uploadFile(URL(fileURLWithPath: "/nonexistent/moya-\(UUID().uuidString)"))))
            guard case .failure(.underlying(_, nil)) = missing else {
                Issue.record("expected a failure, got \(missing)")
                return
            }
            #expect(bin.hits("/upload") == 1)
        }
    }

    @Test func uploadMultipartFormDataSendsTheExactBytes() async throws {
        try await withHttpbin { bin async throws in
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-part-\(UUID().uuidString).txt")
            defer { try? FileManager.default.removeItem(at: url) }
            try Data("file content\n".utf8).write(to: url)
            let form = MultipartFormData(
                boundary: "moya.test.boundary",
                parts: [
                    MultipartFormBodyPart(provider: .data(Data("value".utf8)), name: "field"),
                    MultipartFormBodyPart(
                        provider: .data(Data([0xFF, 0x00])), name: "blob", fileName: "b.bin",
                        mimeType: "application/octet-stream"),
                    MultipartFormBodyPart(provider: .file(url), name: "file", fileName: "a.txt", mimeType: "text/plain")
                ])
            let provider = binProvider()
            let echo = try await provider.request(
                BinTarget(bin, "/post", method: .post, task: .uploadMultipartFormData(form))
            ).echo()
            #expect(echo.contentType == "multipart/form-data; boundary=moya.test.boundary")
            var expected = Data()
            expected.append(
                Data("--moya.test.boundary\r\nContent-Disposition: form-data; name=\"field\"\r\n\r\nvalue".utf8))
            expected.append(
                Data(
                    "\r\n--moya.test.boundary\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"b.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                        .utf8))
            expected.append(Data([0xFF, 0x00]))
            expected.append(
                Data(
                    "\r\n--moya.test.boundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nfile content\n"
                        .utf8))
            expected.append(Data("\r\n--moya.test.boundary--\r\n".utf8))
            #expect(bin.lastBody("/post") == [UInt8](expected))
            #expect(echo.headers["content-length"] == String(expected.count))
        }
    }

    @Test func multipartWithRandomBoundaryAndURLParameters() async throws {
        try await withHttpbin { bin async throws in
            let form: MultipartFormData = [MultipartFormBodyPart(provider: .data(Data("v".utf8)), name: "n")]
            let provider = binProvider()
            let echo = try await provider.request(
                BinTarget(
                    bin, "/post", method: .put,
                    task: .uploadCompositeMultipartFormData(form, urlParameters: ["id": 7]))
            ).echo()
            #expect(echo.target == "/post?id=7")
            let contentType = try #require(echo.contentType)
            #expect(contentType.hasPrefix("multipart/form-data; boundary=alamofire.boundary."))
            let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
            #expect(
                echo.body
                    == "--\(boundary)\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r\n--\(boundary)--\r\n")
        }
    }

    @Test func downloadDestinationWritesTheFile() async throws {
        try await withHttpbin { bin async throws in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-dl-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let destination = directory.appendingPathComponent("nested/file.bin")
            let provider = binProvider()
            let target = BinTarget(
                bin, "/bytes/50000",
                task: .downloadDestination { _, _ in
                    (destination, [.createIntermediateDirectories, .removePreviousFile])
                })
            let response = try await provider.request(target).get()
            #expect(response.statusCode == 200)
            #expect(response.data.isEmpty, "a download's body goes to the file")
            #expect(try Data(contentsOf: destination) == Data(Httpbin.bytes(50000)))

            let withParameters = BinTarget(
                bin, "/bytes/10",
                task: .downloadParameters(
                    parameters: ["v": "1"], encoding: URLEncoding.queryString,
                    destination: { _, _ in (destination, [.removePreviousFile]) }))
            _ = try await provider.request(withParameters).get()
            #expect(bin.hits("/bytes/10?v=1") == 1)
            #expect(try Data(contentsOf: destination) == Data(Httpbin.bytes(10)))
        }
    }

    @Test func downloadProgressReachesCompleted() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let progress = Recorder<ProgressResponse>()
            let result = await provider.requestWithHandler(
                BinTarget(bin, "/bytes/200000"), progress: { progress.append($0) })
            let response = try result.get()
            #expect(response.data.count == 200_000)
            let values = progress.values
            #expect(values.count >= 2, "at least one progress event and the final one")
            let fractions = values.map(\.progress)
            #expect(fractions == fractions.sorted(), "progress never goes back: \(fractions)")
            #expect(values.dropLast().allSatisfy { !$0.completed })
            let last = try #require(values.last)
            #expect(last.completed)
            #expect(last.progress == 1.0)
            #expect(last.response == response)
            #expect(last.progressObject?.totalUnitCount == 200_000)
            #expect(last.progressObject?.completedUnitCount == 200_000)

            // The async stream form ends with the completed element.
            var streamed: [ProgressResponse] = []
            for await element in provider.requestWithProgress(BinTarget(bin, "/bytes/200000")) {
                streamed.append(try element.get())
            }
            #expect(streamed.last?.completed == true)
            #expect(streamed.last?.response?.data.count == 200_000)
        }
    }
}
