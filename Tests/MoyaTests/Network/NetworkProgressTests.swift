import Foundation
import Testing

@testable import Moya

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Upload and download progress through `request(_:progress:)` and `requestWithProgress`, against the loopback
/// httpbin.
@Suite struct NetworkProgressTests {

    /// The progress rules every transfer follows: fractions never go back, only the last event is completed and
    /// it is 1.0 with the response.
    static func checkSequence(
        _ values: [ProgressResponse], response: Moya.Response, total: Int64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(values.count >= 2, "at least one progress event and the final one", sourceLocation: sourceLocation)
        let fractions = values.map(\.progress)
        #expect(
            fractions == fractions.sorted(), "progress never goes back: \(fractions)", sourceLocation: sourceLocation)
        #expect(fractions.allSatisfy { (0...1).contains($0) }, sourceLocation: sourceLocation)
        #expect(values.dropLast().allSatisfy { !$0.completed }, sourceLocation: sourceLocation)
        guard let last = values.last else { return }
        #expect(last.completed, sourceLocation: sourceLocation)
        #expect(last.progress == 1.0, sourceLocation: sourceLocation)
        #expect(last.response === response, sourceLocation: sourceLocation)
        #expect(last.progressObject?.totalUnitCount == total, sourceLocation: sourceLocation)
        #expect(last.progressObject?.completedUnitCount == total, sourceLocation: sourceLocation)
    }

    @Test func fileUploadProgress() async throws {
        try await withHttpbin { bin async throws in
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-progress-\(UUID().uuidString).bin")
            defer { try? FileManager.default.removeItem(at: url) }
            try Data(Httpbin.bytes(300_007)).write(to: url)
            let provider = binProvider()
            let progress = Recorder<ProgressResponse>()
            let result = await provider.requestWithHandler(
                BinTarget(bin, "/upload", method: .put, task: .uploadFile(url)),
                progress: { progress.append($0) })
            let response = try result.get()
            #expect(try response.mapJSON() as? [String: Int] == ["bytes": 300_007])
            Self.checkSequence(progress.values, response: response, total: 300_007)
        }
    }

    /// A multi-MiB file goes out in chunks, and progress follows it: several events with fractions between 0 and 1,
    /// then the completed one.
    @Test func largeFileUploadReportsProgressAsItIsSent() async throws {
        try await withHttpbin { bin async throws in
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-progress-\(UUID().uuidString).bin")
            defer { try? FileManager.default.removeItem(at: url) }
            let size = 6 << 20
            try Data(Httpbin.bytes(size)).write(to: url)
            let provider = binProvider()
            let progress = Recorder<ProgressResponse>()
            let result = await provider.requestWithHandler(
                BinTarget(bin, "/upload", method: .put, task: .uploadFile(url)),
                progress: { progress.append($0) })
            let response = try result.get()
            #expect(try response.mapJSON() as? [String: Int] == ["bytes": size])
            #expect(bin.lastBody("/upload") == Httpbin.bytes(size))
            Self.checkSequence(progress.values, response: response, total: Int64(size))
            let partial = progress.values.filter { $0.progress > 0 && $0.progress < 1 }
            #expect(partial.count >= 4, "progress as the file is sent: \(progress.values.map(\.progress))")
        }
    }

    @Test func multipartUploadProgress() async throws {
        try await withHttpbin { bin async throws in
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-progress-\(UUID().uuidString).txt")
            defer { try? FileManager.default.removeItem(at: url) }
            try Data(Httpbin.bytes(120_000)).write(to: url)
            let form: MultipartFormData = [
                MultipartFormBodyPart(provider: .data(Data("value".utf8)), name: "field"),
                MultipartFormBodyPart(
                    provider: .file(url), name: "file", fileName: "f.bin", mimeType: "application/octet-stream")
            ]
            let provider = binProvider()
            let progress = Recorder<ProgressResponse>()
            let result = await provider.requestWithHandler(
                BinTarget(bin, "/upload", method: .post, task: .uploadMultipartFormData(form)),
                progress: { progress.append($0) })
            let response = try result.get()
            let sent = try #require(bin.lastBody("/upload"))
            #expect(sent.count > 120_000)
            #expect(try response.mapJSON() as? [String: Int] == ["bytes": sent.count])
            Self.checkSequence(progress.values, response: response, total: Int64(sent.count))

            // The async stream form ends with the completed element.
            var streamed: [ProgressResponse] = []
            for await element in provider.requestWithProgress(
                BinTarget(bin, "/upload", method: .post, task: .uploadMultipartFormData(form)))
            {
                streamed.append(try element.get())
            }
            #expect(streamed.map(\.progress) == streamed.map(\.progress).sorted())
            #expect(streamed.last?.completed == true)
            #expect(streamed.last?.progress == 1.0)
            #expect(try streamed.last?.response?.mapJSON() as? [String: Int] == ["bytes": sent.count])
        }
    }

    @Test func downloadToADestinationReportsProgress() async throws {
        try await withHttpbin { bin async throws in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "moya-progress-dl-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let destination = directory.appendingPathComponent("a/b/file.bin")
            let provider = binProvider()
            let progress = Recorder<ProgressResponse>()
            let target = BinTarget(
                bin, "/bytes/400000",
                task: .downloadDestination { temporaryURL, response in
                    #expect(response.statusCode == 200)
                    #expect(temporaryURL.isFileURL)
                    return (destination, [.createIntermediateDirectories, .removePreviousFile])
                })
            let result = await provider.requestWithHandler(target, progress: { progress.append($0) })
            let response = try result.get()
            #expect(response.data.isEmpty, "a download's body goes to the file")
            #expect(try Data(contentsOf: destination) == Data(Httpbin.bytes(400_000)))
            Self.checkSequence(progress.values, response: response, total: 400_000)
            #expect(progress.values.count > 2, "a 400 kB body arrives in several reads")

            // A failing download (the destination cannot be created) ends with a final event without response.
            let blocked = directory.appendingPathComponent("blocker")
            try Data("x".utf8).write(to: blocked)
            let failing = Recorder<ProgressResponse>()
            let failed = await provider.requestWithHandler(
                BinTarget(
                    bin, "/bytes/1000",
                    task: .downloadDestination { _, _ in
                        (blocked.appendingPathComponent("file.bin"), [.createIntermediateDirectories])
                    }), progress: { failing.append($0) })
            guard case .failure(.underlying(_, let failedResponse?)) = failed else {
                Issue.record("expected a failure, got \(failed)")
                return
            }
            #expect(failedResponse.statusCode == 200)
            #expect(failing.values.last?.completed == false)
            #expect(failing.values.last?.response == nil)
        }
    }
}
