import HTTPWire
import NetCore

/// One request/response exchange as it moves through a pool and onto a connection. Loop thread only.
final class HTTPClientExchange {
    /// How the response reaches the caller. Unchecked continuations: the exchange resumes one exactly once (the
    /// delivery is cleared as it is resumed), and a checked one costs an allocation per request.
    enum Delivery {
        /// All of it at the end (`execute`).
        case collected(UnsafeContinuation<HTTPClientResponse, any Error>)
        /// The head as soon as it arrives, the body as a back-pressured ``ByteStream`` (`execute(streaming:)`).
        case streamed(UnsafeContinuation<HTTPClientStreamingResponse, any Error>)
        /// Collected when the head declares a body of at most `threshold` bytes, else streamed
        /// (`execute(_:streamingBodiesLongerThan:)`).
        case collectedOrStreamed(threshold: Int, UnsafeContinuation<HTTPClientResponseOrStream, any Error>)
    }

    let request: HTTPClientRequest
    let head: HTTPRequestHead
    let body: [UInt8]
    let progress: HTTPClientProgress
    let configuration: HTTPClient.Configuration
    let loop: EventLoop
    let startedAt = EventLoop.now()
    let deadline: UInt64?
    private var delivery: Delivery?
    /// Streamed delivery: the body handed to the caller, until it ends.
    private var bodyStream: ByteStream?
    /// Whether the body goes to the caller as a stream (for `collectedOrStreamed`, decided at the head).
    private(set) var isStreamed: Bool
    /// Whether the body is collected whatever its size, so the collected-body limit applies.
    let limitsCollectedBody: Bool
    /// Streamed delivery: set by the connection, called on the loop when the caller has drained the body below its
    /// low-water mark (resume reading, or acknowledge HTTP/2 DATA).
    var onBodyDemand: (() -> Void)?
    /// HTTP/2 streamed delivery: DATA bytes received and not yet acknowledged to the server.
    var unacknowledged = 0
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
         configuration: HTTPClient.Configuration, loop: EventLoop, deadline: UInt64?, delivery: Delivery) {
        self.request = request
        self.head = head
        self.body = body
        self.progress = progress
        self.configuration = configuration
        self.loop = loop
        self.deadline = deadline
        self.delivery = delivery
        if case .streamed = delivery { isStreamed = true } else { isStreamed = false }
        if case .collected = delivery { limitsCollectedBody = true } else { limitsCollectedBody = false }
    }

    /// Whether the caller has its result: the whole response, an error, or the end of a streamed body.
    var isFinished: Bool { delivery == nil && bodyStream == nil }

    /// For a response collected or streamed by size: decides from its head (before ``headReceived()``). A body the
    /// head declares short enough, or a response without a body, is collected.
    func chooseDelivery(for head: HTTPResponseHead) {
        guard case .collectedOrStreamed(let threshold, _) = delivery else { return }
        if request.method == .head || head.status == 204 || head.status == 304 { return }
        if let length = head.headers.first(name: "Content-Length").flatMap({ Int($0) }), length <= threshold { return }
        isStreamed = true
    }

    /// The response head is in `responseHead`: a streamed delivery hands it to the caller now.
    func headReceived() {
        guard isStreamed, let delivery, let head = responseHead else { return }
        self.delivery = nil
        let owner = UncheckedSendable(self)
        let loop = self.loop
        let stream = ByteStream { loop.execute { owner.value.onBodyDemand?() } }
        bodyStream = stream
        let firstByte = Duration.nanoseconds(Int64(clamping: (firstByteAt == 0 ? EventLoop.now() : firstByteAt) &- startedAt))
        let timings = HTTPClientTimings(connect: connectDuration, firstByte: firstByte, total: firstByte)
        let response = HTTPClientStreamingResponse(head: head, body: stream, timings: timings) {
            loop.execute {
                let exchange = owner.value
                guard exchange.bodyStream != nil else { return }
                if let cancel = exchange.onCancel { cancel() } else { exchange.fail(.cancelled) }
            }
        }
        switch delivery {
        case .streamed(let continuation): continuation.resume(returning: response)
        case .collectedOrStreamed(_, let continuation): continuation.resume(returning: .streamed(response))
        case .collected: break
        }
    }

    /// Takes response body bytes. Returns false when a streamed body's consumer is behind: stop reading until
    /// `onBodyDemand`.
    func receive(_ bytes: [UInt8]) -> Bool {
        if let bodyStream { return bodyStream.yield(bytes) }
        responseBody.append(contentsOf: bytes)
        return true
    }

    /// Body bytes received so far (collected, or counted for progress when streamed).
    private(set) var receivedBodyBytes: Int64 = 0

    /// Counts body bytes for progress and limits.
    func countBody(_ count: Int) -> Int64 {
        receivedBodyBytes += Int64(count)
        return receivedBodyBytes
    }

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
        timer?.cancel()
        if let bodyStream {
            self.bodyStream = nil
            bodyStream.finish()
            return
        }
        guard delivery != nil, !isStreamed, let head = responseHead else { return }
        let result = collectedResponse(head: head)
        switch delivery {
        case .collected(let continuation): continuation.resume(with: result)
        case .collectedOrStreamed(_, let continuation): continuation.resume(with: result.map { .collected($0) })
        case .streamed, nil: return
        }
        delivery = nil
    }

    /// The whole response: the body decoded as configured, timings taken now.
    private func collectedResponse(head: HTTPResponseHead) -> Result<HTTPClientResponse, any Error> {
        var head = head
        if let limits = configuration.decompression, request.method != .head,
           let value = head.headers.first(name: "Content-Encoding"),
           case let coding = ContentCoding(rawValue: String(Substring(value).trimmingHTTPWhitespace())),
           coding == .gzip || coding == .deflate {
            do {
                responseBody = try Inflater.decompress(responseBody, maxOutputBytes: limits.maxBytes, maxRatio: limits.maxRatio)
                head.headers.remove(name: "Content-Encoding")
                head.headers.replaceOrAdd(name: "Content-Length", value: String(responseBody.count))
            } catch CompressionError.limitExceeded {
                return .failure(HTTPClientError.decompressionLimitExceeded)
            } catch {
                return .failure(HTTPClientError.malformedResponse(reason: "undecodable \(coding) body"))
            }
        }
        let now = EventLoop.now()
        let timings = HTTPClientTimings(
            connect: connectDuration,
            firstByte: .nanoseconds(Int64(clamping: (firstByteAt == 0 ? now : firstByteAt) &- startedAt)),
            total: .nanoseconds(Int64(clamping: now &- startedAt)))
        return .success(HTTPClientResponse(head: head, body: responseBody, timings: timings))
    }

    func fail(_ error: HTTPClientError) {
        timer?.cancel()
        if let bodyStream {
            self.bodyStream = nil
            bodyStream.fail(error)
            return
        }
        switch delivery {
        case .collected(let continuation): continuation.resume(throwing: error)
        case .streamed(let continuation): continuation.resume(throwing: error)
        case .collectedOrStreamed(_, let continuation): continuation.resume(throwing: error)
        case nil: return
        }
        delivery = nil
    }
}
