import HTTPClientCore
import HTTPServerCore
import HTTPWire
import NetCore
import Testing

/// Requests waiting for a connection (HTTP/1.1, every allowed connection busy) or a stream (HTTP/2, the server's
/// concurrent-stream limit reached) fail once their wait passes `maxWaitTime`, or their deadline.
@Suite(.serialized) struct HTTPClientWaitTimeoutTests {
    /// Starts a 3 s request that occupies the only connection or stream, then `waiting` (which must fail while the
    /// first is still running); returns the waiter's error.
    private func waiterError(
        client: HTTPClient, base: String,
        waiting: @escaping @Sendable () async throws -> HTTPClientResponse
    ) async throws -> (any Error)? {
        let busyDone = AtomicCounter()
        let busy = Task {
            let response = try await client.execute(HTTPClientRequest(url: "\(base)/slow?ms=3000"))
            busyDone.add(1)
            return response
        }
        try await Task.sleep(for: .milliseconds(100))
        var failure: (any Error)?
        do {
            _ = try await waiting()
        } catch {
            failure = error
        }
        #expect(busyDone.value == 0, "the waiter gave up while the busy request was still running")
        #expect(try await busy.value.status == 200, "the busy request is unaffected")
        return failure
    }

    @Test(arguments: [HTTPClient.Configuration.HTTP2Mode.never, .always])
    func aQueuedRequestFailsAfterMaxWaitTime(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 1
        let (server, base) = try await startUploadServer(http2Settings: settings)
        let client = uploadClient(mode) {
            $0.maxConnectionsPerOrigin = 1
            $0.maxWaitTime = .milliseconds(300)
        }
        _ = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
        let error = try await waiterError(client: client, base: base) {
            try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
        }
        #expect(error as? HTTPClientError == .poolWaitTimeout)
        let after = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
        #expect(after.timings.connect == nil, "the pool goes on with its connection")
        await server.shutdown(timeout: .seconds(1))
    }

    @Test(arguments: [HTTPClient.Configuration.HTTP2Mode.never, .always])
    func theDeadlineAlsoEndsAWait(mode: HTTPClient.Configuration.HTTP2Mode) async throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 1
        let (server, base) = try await startUploadServer(http2Settings: settings)
        let client = uploadClient(mode) {
            $0.maxConnectionsPerOrigin = 1
            $0.maxWaitTime = nil
        }
        _ = try await client.execute(HTTPClientRequest(url: "\(base)/hello"))
        let error = try await waiterError(client: client, base: base) {
            try await client.execute(HTTPClientRequest(url: "\(base)/hello"), deadline: .now + .milliseconds(300))
        }
        #expect(error as? HTTPClientError == .responseTimeout)
        await server.shutdown(timeout: .seconds(1))
    }
}
