import Foundation
import Testing

@testable import Moya

@Suite struct MultipartFormDataTests {

    @Test func encodesBytesExactly() throws {
        let encoder = RequestMultipartFormData(boundary: "B")
        encoder.append(Data("v1".utf8), withName: "a")
        encoder.append(Data("v2".utf8), withName: "b", fileName: "f.txt", mimeType: "text/plain")
        let expected =
            "--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv1"
            + "\r\n--B\r\nContent-Disposition: form-data; name=\"b\"; filename=\"f.txt\"\r\nContent-Type: text/plain\r\n\r\nv2"
            + "\r\n--B--\r\n"
        #expect(try encoder.encode().utf8String == expected)
        #expect(encoder.contentType == "multipart/form-data; boundary=B")
        #expect(encoder.encodedLength == UInt64(expected.utf8.count))
    }

    @Test func moyaSplitExpectation() throws {
        let form: MultipartFormData = [
            MultipartFormBodyPart(provider: .data(Data("test1".utf8)), name: "test1"),
            MultipartFormBodyPart(provider: .data(Data("test2".utf8)), name: "test2")
        ]
        let encoder = RequestMultipartFormData(fileManager: form.fileManager, boundary: form.boundary)
        encoder.applyMoyaMultipartFormData(form)
        let pieces = try encoder.encode().utf8String.split(separator: "-").map(String.init)
        #expect(pieces.contains("data; name=\"test1\"\r\n\r\ntest1\r\n"))
        #expect(pieces.contains("data; name=\"test2\"\r\n\r\ntest2\r\n"))
    }

    @Test func randomBoundaryFormat() {
        let boundary = RequestMultipartFormData.randomBoundary()
        #expect(boundary.hasPrefix("alamofire.boundary."))
        #expect(boundary.count == "alamofire.boundary.".count + 16)
    }

    @Test func fileAndStreamParts() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("moya-mp-\(UUID().uuidString).png")
        try Data("PNGDATA".utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let encoder = RequestMultipartFormData(boundary: "X")
        encoder.applyMoyaMultipartFormData([
            MultipartFormBodyPart(provider: .file(url), name: "img"),
            MultipartFormBodyPart(provider: .stream(InputStream(data: Data("abc".utf8)), 3), name: "s")
        ])
        let expected =
            "--X\r\nContent-Disposition: form-data; name=\"img\"; filename=\"\(url.lastPathComponent)\"\r\nContent-Type: image/png\r\n\r\nPNGDATA"
            + "\r\n--X\r\nContent-Disposition: form-data; name=\"s\"; filename=\"\"\r\nContent-Type: \r\n\r\nabc"
            + "\r\n--X--\r\n"
        #expect(try encoder.encode().utf8String == expected)
    }

    @Test func streamedBodyMatchesEncodedBody() async throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("moya-mp-\(UUID().uuidString).txt")
        let big = Data((0..<200_000).map { UInt8($0 % 251) })
        try big.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let parts = [
            MultipartFormBodyPart(provider: .data(Data("x".utf8)), name: "a"),
            MultipartFormBodyPart(
                provider: .file(url), name: "f", fileName: "f.bin", mimeType: "application/octet-stream")
        ]
        let encoder = RequestMultipartFormData(boundary: "S")
        encoder.applyMoyaMultipartFormData(parts)
        let (stream, length) = try encoder.makeBodyStream(chunkSize: 4096)
        var streamed = [UInt8]()
        for try await chunk in stream { streamed += chunk }
        let encoded = try encoder.encode()
        #expect(Data(streamed) == encoded)
        #expect(Int64(encoded.count) == length)
    }

    @Test func missingFileIsAnError() {
        let encoder = RequestMultipartFormData(boundary: "X")
        encoder.append(URL(fileURLWithPath: "/nonexistent/file.txt"), withName: "f")
        #expect(throws: RequestMultipartFormData.EncodingError.self) { try encoder.encode() }
    }

    @Test func hashableAndLiteral() {
        let stream = InputStream(data: Data())
        let a: MultipartFormData = [MultipartFormBodyPart(provider: .stream(stream, 0), name: "s")]
        let b = MultipartFormData(parts: [MultipartFormBodyPart(provider: .stream(stream, 0), name: "s")])
        let c = MultipartFormData(parts: [
            MultipartFormBodyPart(provider: .stream(InputStream(data: Data()), 0), name: "s")
        ])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != c)
        #expect(MultipartFormData(boundary: "x", parts: []) != MultipartFormData(boundary: "y", parts: []))
    }
}
