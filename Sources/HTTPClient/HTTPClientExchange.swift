import HTTPWire
import NetCore

/// One request/response exchange as it moves through a pool and onto a connection. Loop thread only.
final class HTTPClientExchange {
    /// How the response reaches the caller.
    enum Delivery {
        /// All of it at the end (`execute`).
        case collected(CheckedContinuation<HTTPClientResponse, any Error>)
        /// The head as soon as it arrives, the body as a back-pressured ``ByteStream`` (`execute(streaming:)`).
        case streamed(CheckedContinuation<HTTPClientStreamingResponse, any Error>)
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
    let isStreamed: Bool
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
    }

    /// Whether the caller has its result: the whole response, an error, or the end of a streamed body.
    var isFinished: Bool { delivery == nil && bodyStream == nil }

    /// The response head is in `responseHead`: a streamed delivery hands it to the caller now.
    func headReceived() {
        guard case .streamed(let continuation) = delivery, let head = responseHead else { return }
        delivery = nil
        let owner = UncheckedSendable(self)
        let loop = self.loop
        let stream = ByteStream { loop.execute { owner.value.onBodyDemand?() } }
        bodyStream = stream
        let firstByte = Duration.nanoseconds(Int64(clamping: (firstByteAt == 0 ? EventLoop.now() : firstByteAt) &- startedAt))
        let timings = HTTPClientTimings(connect: connectDuration, firstByte: firstByte, total: firstByte)
        continuation.resume(returning: HTTPClientStreamingResponse(head: head, body: stream, timings: timings) {
            loop.execute {
                let exchange = owner.value
                guard exchange.bodyStream != nil else { return }
                if let cancel = exchange.onCancel { cancel() } else { exchange.fail(.cancelled) }
            }
        })
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
        guard case .collected(let continuation) = delivery, var head = responseHead else { return }
        delivery = nil
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
        timer?.cancel()
        if let bodyStream {
            self.bodyStream = nil
            bodyStream.fail(error)
            return
        }
        switch delivery {
        case .collected(let continuation): continuation.resume(throwing: error)
        case .streamed(let continuation): continuation.resume(throwing: error)
        case nil: return
        }
        delivery = nil
    }
}
