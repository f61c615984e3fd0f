import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import TestSupport
import Testing

/// Streamed request bodies (`.stream`, `.file`) over HTTP/1.1 and h2c against our own server.
@Suite(.serialized) struct HTTPClientUploadTests {
    static let modes: [HTTPClient.Configuration.HTTP2Mode] = [.never, .always]

    @Test(arguments: modes)
    func streamsWithKnownAndUnknownLengthAndFilesArriveWhole(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        let (server, base) = try await startUploadServer()
        let client = uploadClient(mode)
        let total = 3 << 20
        for length in [Int64(total), nil] {
            let pulled = AtomicCounter()
            let log = ProgressLog()
            let body = HTTPClientRequest.Body.stream(
                patternStream(total: total, chunk: 16 * 1024, pulled: pulled), length: length)
            let response = try await client.execute(
                HTTPClientRequest(method: .post, url: "\(base)/count", body: body),
                progress: log.progress)
            let framing = length == nil ? (mode == .never ? "chunked" : "none") : "length \(total)"
            #expect(text(of: response) == "\(total) ok \(framing)")
            #expect(response.head.version == (mode == .never ? .http1_1 : .http2))
            let events = log.all
            #expect(events.count >= 3, "progress as the body goes out, not once: \(events.count) events")
            #expect(events.count <= total / 65536 + 2, "in steps, not per 16 KiB chunk: \(events.count) events")
            #expect(events.map(\.completed) == events.map(\.completed).sorted(), "never goes back")
            #expect(
                events.last.map { $0.completed == Int64(total) && $0.total == Int64(total) } == true,
                "ends at the total: \(String(describing: events.last))")
            #expect(events.dropLast().allSatisfy { $0.total == length }, "the total along the way only when declared")
        }

        let path = ProcessRunner.temporaryDirectory("upload") + "/body.bin"
        let fileSize = 5 * 128 * 1024 + 77
        try Data((0..<fileSize).map { patternByte($0) }).write(to: URL(fileURLWithPath: path))
        let log = ProgressLog()
        let response = try await client.execute(
            HTTPClientRequest(method: .put, url: "\(base)/count", body: .file(path: path)),
            progress: log.progress)
        #expect(text(of: response) == "\(fileSize) ok length \(fileSize)")
        #expect(log.all.count >= 2)
        #expect(log.all.last.map { $0.completed == Int64(fileSize) && $0.total == Int64(fileSize) } == true)

        await #expect(
            throws: HTTPClientError.requestBodyFailed(
                reason: "open /nonexistent/upload: No such file or directory (errno 2)")
        ) {
            _ = try await client.execute(
                HTTPClientRequest(method: .put, url: "\(base)/count", body: .file(path: "/nonexistent/upload")))
        }
        let empty = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(base)/count", body: .stream(AsyncThrowingStream { $0.finish() }, length: nil)))
        #expect(text(of: empty) == (mode == .never ? "0 ok chunked" : "0 ok none"))
        await server.shutdown(timeout: .seconds(1))
    }

    /// 64 MiB to a handler that does not read until a gate opens. While it stalls, the client holds little in user
    /// space (what it pulled from the producer minus what it reported as handed to the socket, or to the HTTP/2
    /// window), and the producer is far from done (the rest of the gap is the kernel's socket buffers); then every
    /// byte arrives in order.
    @Test(arguments: modes)
    func aLargeUploadToAStalledServerHoldsLittleInMemory(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        let gate = UploadGate()
        let (server, base) = try await startUploadServer(gate: gate)
        let client = uploadClient(mode)
        let total = 64 << 20
        let pulled = AtomicCounter()
        let log = ProgressLog()
        let request = try HTTPClientRequest(
            method: .post, url: "\(base)/stall",
            body: .stream(patternStream(total: total, pulled: pulled), length: Int64(total)))
        let upload = Task { try await client.execute(request, progress: log.progress) }
        // Wait until the producer has stopped being asked for more (the same count over 300 ms), at most 10 s.
        var previous = -1
        var steady = 0
        for _ in 0..<100 where steady < 3 {
            try await Task.sleep(for: .milliseconds(100))
            let now = pulled.value
            steady = now == previous ? steady + 1 : 0
            previous = now
        }
        let stalledPulled = pulled.value
        let stalledSent = log.lastCompleted
        #expect(steady >= 3, "the producer stopped being pulled")
        #expect(
            stalledPulled - Int(stalledSent) <= 2 << 20,
            "user space holds at most about a write mark and two chunks: pulled \(stalledPulled), sent \(stalledSent)")
        #expect(stalledPulled <= 24 << 20, "pulled \(stalledPulled) of \(total) while the server did not read")
        gate.open()
        let response = try await upload.value
        #expect(text(of: response) == "\(total) ok length \(total)")
        #expect(pulled.value == total)
        #expect(log.lastCompleted == Int64(total))
        await server.shutdown(timeout: .seconds(1))
    }

    @Test(arguments: modes)
    func lengthMismatchesAndThrowingStreamsFailAndHTTP1NeverReusesTheConnection(
        mode: HTTPClient.Configuration.HTTP2Mode
    ) async throws {
        let (server, base) = try await startUploadServer()
        let client = uploadClient(mode)
        let cases: [(body: HTTPClientRequest.Body, reason: String)] = [
            (
                .stream(patternStream(total: 500, pulled: AtomicCounter()), length: 1000),
                "the body ended after 500 of its declared 1000 bytes"
            ),
            (
                .stream(patternStream(total: 300 * 1024, pulled: AtomicCounter()), length: 200 * 1024),
                "the body is longer than its declared 204800 bytes"
            ),
            (
                .stream(patternStream(total: 1 << 20, pulled: AtomicCounter(), failAfter: 128 * 1024), length: nil),
                "UploadBoom()"
            )
        ]
        for (body, reason) in cases {
            let warm = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
            #expect(warm.status == 200)
            await #expect(throws: HTTPClientError.requestBodyFailed(reason: reason)) {
                _ = try await client.execute(HTTPClientRequest(method: .post, url: "\(base)/count", body: body))
            }
            let after = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
            #expect(after.status == 200)
            if mode == .never {
                #expect(after.timings.connect != nil, "HTTP/1.1: the connection of the failed body was closed")
            } else {
                #expect(after.timings.connect == nil, "HTTP/2: only the stream was reset")
            }
        }
        await server.shutdown(timeout: .seconds(1))
    }

    /// The handler refuses with 413 without reading: the client stops sending (the producer is far from done), the
    /// response arrives, and an HTTP/1.1 connection is not used again. Also the server's own 413 for a declared
    /// length over its limit.
    @Test(arguments: modes)
    func anEarlyRefusalStopsTheUpload(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        let (server, base) = try await startUploadServer()
        let client = uploadClient(mode)
        let total = 64 << 20
        _ = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
        let pulled = AtomicCounter()
        let refused = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(base)/reject",
                body: .stream(patternStream(total: total, pulled: pulled), length: Int64(total))))
        #expect(refused.status == 413)
        #expect(text(of: refused) == "too large")
        #expect(pulled.value < total / 2, "stopped sending: \(pulled.value) of \(total) pulled")
        let after = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
        #expect((after.timings.connect != nil) == (mode == .never))

        let (limited, limitedBase) = try await startUploadServer(maxBodyBytes: 1 << 20)
        let overLimit = AtomicCounter()
        let tooLarge = try await client.execute(
            HTTPClientRequest(
                method: .post, url: "\(limitedBase)/count",
                body: .stream(patternStream(total: total, pulled: overLimit), length: Int64(total))))
        #expect(tooLarge.status == 413)
        #expect(overLimit.value < total / 2, "stopped sending: \(overLimit.value) of \(total) pulled")
        await limited.shutdown(timeout: .seconds(1))
        await server.shutdown(timeout: .seconds(1))
    }
}
