import Foundation
import HTTPClientCore
import HTTPWire
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Conversion between Foundation's request/response and the transport's types (no network).
@Suite struct SessionTests {
    let session = Session(headers: ["User-Agent": "UA", "Accept-Language": "en;q=1.0"])

    @Test func convertsURLRequest() throws {
        var request = URLRequest(url: URL(string: "https://example.com:8443/a/b?x=1&y=%20")!)
        request.httpMethod = "PUT"
        request.setValue("custom", forHTTPHeaderField: "user-agent")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data("{}".utf8)
        let converted = try session.clientRequest(for: request, upload: .requestBody)
        #expect(converted.method == .put)
        #expect(converted.scheme == "https")
        #expect(converted.host == "example.com")
        #expect(converted.port == 8443)
        #expect(converted.target == "/a/b?x=1&y=%20")
        #expect(converted.headers["User-Agent"] == ["custom"])
        #expect(converted.headers.first(name: "Accept-Language") == "en;q=1.0")
        #expect(converted.headers.first(name: "Content-Type") == "application/json")
        if case .bytes(let bytes) = converted.body {
            #expect(bytes == Array("{}".utf8))
        } else {
            Issue.record("expected bytes")
        }
    }

    @Test func fileAndMultipartBodies() throws {
        var request = URLRequest(url: URL(string: "http://example.com/up")!)
        request.httpMethod = "POST"
        let file = try session.clientRequest(for: request, upload: .file(URL(fileURLWithPath: "/tmp/f.bin")))
        if case .file(let path) = file.body { #expect(path == "/tmp/f.bin") } else { Issue.record("expected file") }
        let form = MultipartFormData(
            boundary: "BB", parts: [MultipartFormBodyPart(provider: .data(Data("v".utf8)), name: "n")])
        let multipart = try session.clientRequest(for: request, upload: .multipart(form))
        #expect(multipart.headers.first(name: "Content-Type") == "multipart/form-data; boundary=BB")
        if case .stream(_, let length) = multipart.body {
            #expect(
                length == Int64("--BB\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nv\r\n--BB--\r\n".utf8.count))
        } else {
            Issue.record("expected stream")
        }
    }

    @Test func rejectsNonHTTPURLs() {
        #expect(throws: MoyaRequestError.self) {
            try session.clientRequest(for: URLRequest(url: URL(string: "ftp://example.com/x")!), upload: .requestBody)
        }
        let error = TransportErrors.moyaError(for: MoyaRequestError.unsupportedURL("ftp://x"))
        if case .requestMapping("ftp://x") = error {} else { Issue.record("expected requestMapping") }
        let cancelled = TransportErrors.moyaError(for: HTTPClientError.cancelled)
        #expect(cancelled.isCancellation)
    }

    @Test func convertsResponse() {
        let head = HTTPResponseHead(
            status: 201,
            headers: HTTPFields([("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")]))
        let response = HTTPClientResponse(head: head, body: Array("ok".utf8), timings: HTTPClientTimings())
        let http = Session.httpURLResponse(for: response, url: URL(string: "https://example.com/x"))
        #expect(http?.statusCode == 201)
        #expect(http?.value(forHTTPHeaderField: "Content-Type") == "text/plain")
        #expect(http?.value(forHTTPHeaderField: "Set-Cookie") == "a=1, b=2")
        #expect(http?.url?.absoluteString == "https://example.com/x")
    }

    @Test func storesDownloads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("moya-dl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let destinationURL = directory.appendingPathComponent("sub/file.txt")
        let http = HTTPURLResponse(
            url: URL(string: "https://example.com/file.txt")!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        try Session.storeDownload(
            Data("one".utf8), response: http,
            destination: { _, _ in (destinationURL, [.createIntermediateDirectories]) })
        #expect(try Data(contentsOf: destinationURL).utf8String == "one")
        #expect(throws: (any Error).self) {
            try Session.storeDownload(Data("two".utf8), response: http, destination: { _, _ in (destinationURL, []) })
        }
        try Session.storeDownload(
            Data("two".utf8), response: http, destination: { _, _ in (destinationURL, [.removePreviousFile]) })
        #expect(try Data(contentsOf: destinationURL).utf8String == "two")
    }

    @Test func multipartOnGETIsAnErrorNotACrash() async {
        let form: MultipartFormData = [MultipartFormBodyPart(provider: .data(Data("a".utf8)), name: "a")]
        let provider = MoyaProvider<TestTarget>()
        let result = await provider.request(TestTarget(method: .get, task: .uploadMultipartFormData(form)))
        guard case .failure(.underlying(let error, nil)) = result else {
            Issue.record("expected failure")
            return
        }
        #expect((error as? MoyaRequestError) == .multipartNotSupported(method: "GET"))
        let empty = await provider.request(TestTarget(method: .post, task: .uploadMultipartFormData([])))
        guard case .failure(.underlying(let emptyError, nil)) = empty else {
            Issue.record("expected failure")
            return
        }
        #expect((emptyError as? MoyaRequestError) == .emptyMultipartForm)
    }
}
