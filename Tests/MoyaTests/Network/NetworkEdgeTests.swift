import Foundation
import HTTPClientCore
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Less common paths against the loopback httpbin: HEAD, timeouts, re-sent bodies, concurrency, encodings.
@Suite struct NetworkEdgeTests {

    @Test func headHasNoBodyAndKeepsTheConnectionUsable() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let head = try await provider.response(BinTarget(bin, "/bytes/100", method: .head))
            #expect(head.statusCode == 200)
            #expect(head.data.isEmpty)
            #expect(head.response?.value(forHTTPHeaderField: "Content-Length") == "100")
            let get = try await provider.response(BinTarget(bin, "/bytes/100"))
            #expect(get.data == Data(Httpbin.bytes(100)))
        }
    }

    @Test func otherMethodsCarryTheirBodies() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            for method in [Moya.Method.patch, .delete, .put, .options] {
                let echo = try await provider.request(
                    BinTarget(
                        bin, "/anything/m", method: method,
                        task: .requestParameters(parameters: ["m": method.rawValue], encoding: JSONEncoding.default))
                ).echo()
                #expect(echo.method == method.rawValue)
                #expect(echo.body == #"{"m":"\#(method.rawValue)"}"#)
            }
        }
    }

    @Test func unicodeParametersArePercentEncoded() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let echo = try await provider.request(
                BinTarget(
                    bin, "/get",
                    task: .requestParameters(
                        parameters: ["q": "café ☕️", "plus": "a+b", "slash": "a/b?c"], encoding: URLEncoding.queryString)
                )
            ).echo()
            #expect(echo.target == "/get?plus=a%2Bb&q=caf%C3%A9%20%E2%98%95%EF%B8%8F&slash=a/b?c")
            let form = try await provider.request(
                BinTarget(
                    bin, "/post", method: .post,
                    task: .requestParameters(
                        parameters: ["name": "Zoë & co"], encoding: URLEncoding.httpBody))
            ).echo()
            #expect(form.body == "name=Zo%C3%AB%20%26%20co")
        }
    }

    @Test func requestTimeoutIntervalIsTheDeadline() async throws {
        try await withHttpbin { bin async throws in
            let provider = MoyaProvider<BinTarget>(
                requestClosure: { endpoint, done in
                    do {
                        var request = try endpoint.urlRequest()
                        request.timeoutInterval = 0.2
                        done(.success(request))
                    } catch {
                        done(.failure(.requestMapping(endpoint.url)))
                    }
                }, session: Session(client: HTTPClient(), headers: [:]))
            let started = ContinuousClock.now
            let result = await provider.request(BinTarget(bin, "/delay/10000"))
            #expect(ContinuousClock.now - started < .seconds(8), "before the server would answer (10 s)")
            guard case .failure(.underlying(let error, nil)) = result, case HTTPClientError.responseTimeout = error
            else {
                Issue.record("expected a response timeout, got \(result)")
                return
            }
            #expect(try await provider.response(BinTarget(bin, "/delay/10")).statusCode == 200)
        }
    }

    @Test func retriedUploadsResendTheWholeBody() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [
                RetryPlugin(policy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
            ])
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-retry-\(UUID().uuidString).bin")
            defer { try? FileManager.default.removeItem(at: url) }
            try Data(Httpbin.bytes(70_000)).write(to: url)

            let file = try await provider.response(
                BinTarget(bin, "/flaky/file/1", method: .put, task: .uploadFile(url)))
            #expect(file.statusCode == 200)
            #expect(bin.hits("/flaky/file/1") == 2)
            #expect(bin.lastBody("/flaky/file/1") == Httpbin.bytes(70_000))

            let form = MultipartFormData(
                boundary: "b",
                parts: [
                    MultipartFormBodyPart(
                        provider: .file(url), name: "f", fileName: "f.bin", mimeType: "application/octet-stream")
                ])
            let multipart = try await provider.response(
                BinTarget(bin, "/flaky/form/2", method: .put, task: .uploadMultipartFormData(form)))
            #expect(multipart.statusCode == 200)
            #expect(bin.hits("/flaky/form/2") == 3)
            let expected =
                Array(
                    "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                        .utf8)
                + Httpbin.bytes(70_000) + Array("\r\n--b--\r\n".utf8)
            #expect(bin.lastBody("/flaky/form/2") == expected, "the third send carries the whole form again")
        }
    }

    @Test func challengeAnswerResendsTheBody() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider(plugins: [
                CredentialsPlugin { _ in URLCredential(user: "u", password: "p", persistence: .none) }
            ])
            let response = try await provider.response(
                BinTarget(bin, "/basic-auth/u/p", method: .post, task: .requestData(Data("payload".utf8))))
            #expect(response.statusCode == 200)
            #expect(bin.hits("/basic-auth/u/p") == 2)
            #expect(bin.lastBody("/basic-auth/u/p") == Array("payload".utf8))
        }
    }

    @Test func manyConcurrentRequestsOnOneProvider() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let paths = await withTaskGroup(of: String?.self) { group in
                for index in 0..<50 {
                    group.addTask { try? await provider.request(BinTarget(bin, "/anything/\(index)")).echo().path }
                }
                return await group.reduce(into: Set<String>()) { if let path = $1 { $0.insert(path) } }
            }
            #expect(paths == Set((0..<50).map { "/anything/\($0)" }))
        }
    }

    @Test func cancellingRightAwayCompletesOnceWithCancellation() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let results = Recorder<Result<Moya.Response, MoyaError>>()
            let token = provider.request(BinTarget(bin, "/delay/1000")) { results.append($0) }
            token.cancel()
            #expect(await waitUntil(timeout: 8) { results.count == 1 })
            let result = try #require(results.values.first)
            guard case .failure(let error) = result else {
                Issue.record("expected a cancellation, got \(result)")
                return
            }
            #expect(error.isCancellation)
            try await _Concurrency.Task.sleep(for: .milliseconds(100))
            #expect(results.count == 1)
        }
    }

    @Test func largeResponseBody() async throws {
        try await withHttpbin { bin async throws in
            let provider = binProvider()
            let response = try await provider.response(BinTarget(bin, "/bytes/2000000"))
            #expect(response.data.count == 2_000_000)
            #expect(response.data == Data(Httpbin.bytes(2_000_000)))
        }
    }
}
