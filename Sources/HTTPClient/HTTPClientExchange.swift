import HTTPWire
import NetCore

/// One request/response exchange as it moves through a pool and onto a connection. Loop thread only.
final class HTTPClientExchange {
    let request: HTTPClientRequest
    let head: HTTPRequestHead
    let body: [UInt8]
    let progress: HTTPClientProgress
    let configuration: HTTPClient.Configuration
    let startedAt = EventLoop.now()
    let deadline: UInt64?
    private var continuation: CheckedContinuation<HTTPClientResponse, any Error>?
    var responseHead: HTTPResponseHead?
    var responseBody: [UInt8] = []
    var responseStarted = false
    var connectDuration: Duration?
    var firstByteAt: UInt64 = 0
    /// Set once the exchange has been retried on a fresh connection.
    var retried = false
    /// Times the exchange was moved to another HTTP/2 connection because the server did not process it (GOAWAY,
    /// REFUSED_STREAM).
    var unprocessedRetries = 0
    /// Forces a new connection (used for the retry).
    var requiresFreshConnection = false
    var timer: LoopTimer?
    var onCancel: (() -> Void)?

    init(request: HTTPClientRequest, head: HTTPRequestHead, body: [UInt8], progress: HTTPClientProgress,
         configuration: HTTPClient.Configuration, deadline: UInt64?, continuation: CheckedContinuation<HTTPClientResponse, any Error>) {
        self.request = request
        self.head = head
        self.body = body
        self.progress = progress
        self.configuration = configuration
        self.deadline = deadline
        self.continuation = continuation
    }

    var isFinished: Bool { continuation == nil }

    /// The earliest of the response timeout (from now) and the overall deadline.
    func responseDeadline(now: UInt64) -> UInt64? {
        var result = deadline
        if let timeout = configuration.responseTimeout {
            let candidate = now &+ timeout.nanoseconds
            result = min(result ?? candidate, candidate)
        }
        return result
    }

    func succeed() {
        guard let continuation, var head = responseHead else { return }
        self.continuation = nil
        timer?.cancel()
        if let limits = configuration.decompression, request.method != .head,
           let value = head.headers.first(name: "Content-Encoding"),
           case let coding = ContentCoding(rawValue: String(Substring(value).trimmingHTTPWhitespace())),
           coding == .gzip || coding == .deflate {
            do {
                responseBody = try Inflater.decompress(responseBody, maxOutputBytes: limits.maxBytes, maxRatio: limits.maxRatio)
                head.headers.remove(name: "Content-Encoding")
                head.headers.replaceOrAdd(name: "Content-Length", value: String(responseBody.count))
            } catch CompressionError.limitExceeded {
                continuation.resume(throwing: HTTPClientError.decompressionLimitExceeded)
                return
            } catch {
                continuation.resume(throwing: HTTPClientError.malformedResponse(reason: "undecodable \(coding) body"))
                return
            }
        }
        let now = EventLoop.now()
        let timings = HTTPClientTimings(
            connect: connectDuration,
            firstByte: .nanoseconds(Int64(clamping: (firstByteAt == 0 ? now : firstByteAt) &- startedAt)),
            total: .nanoseconds(Int64(clamping: now &- startedAt)))
        continuation.resume(returning: HTTPClientResponse(head: head, body: responseBody, timings: timings))
    }

    func fail(_ error: HTTPClientError) {
        guard let continuation else { return }
        self.continuation = nil
        timer?.cancel()
        continuation.resume(throwing: error)
    }
}
