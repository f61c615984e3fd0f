/// Decodes one message body (Content-Length, chunked or read-until-close) out of an ``HTTP1ByteBuffer``, emitting
/// bytes as soon as they are buffered. Shared by the request and response parsers.
struct HTTP1BodyDecoder: Sendable {
    enum State: Sendable, Hashable {
        case contentLength(remaining: Int64)
        case chunkSizeLine
        case chunkData(remaining: Int64)
        case chunkDataEnd
        case trailers
        case untilClose
        /// The body is complete; the next step reports `.end`.
        case finished
    }

    enum Step: Sendable {
        case body([UInt8])
        case end
        case needMore
        case error(HTTP1ParseError)
    }

    /// The longest chunk-size line (with extensions) accepted, without its CRLF.
    static let maxChunkLineBytes = 4096

    var state: State
    /// The body bytes counted against `maxBodyBytes` so far (chunked or read until close).
    private var chunkedTotal: Int64 = 0
    private var scanned = 0
    private var trailerBytes = 0
    private var trailerCount = 0
    private let maxBodyBytes: Int64
    private let maxTrailerBytes: Int
    private let maxTrailers: Int
    private let errorStatus: Int?

    /// - Parameter errorStatus: the status for every error, or nil for the request statuses (400, 413, 431).
    init(state: State, maxBodyBytes: Int64, maxTrailerBytes: Int, maxTrailers: Int, errorStatus: Int? = nil) {
        self.state = state
        self.maxBodyBytes = maxBodyBytes
        self.maxTrailerBytes = maxTrailerBytes
        self.maxTrailers = maxTrailers
        self.errorStatus = errorStatus
    }

    private func failure(_ status: Int, _ reason: String) -> Step {
        .error(HTTP1ParseError(status: errorStatus ?? status, reason: reason))
    }

    /// Produces the next body event from `buffer`. `eof` says the peer closed: a body that is not complete then
    /// fails, and a read-until-close body ends.
    mutating func step(_ buffer: inout HTTP1ByteBuffer, eof: Bool) -> Step {
        while true {
            switch state {
            case .finished:
                return .end

            case .contentLength(let remaining):
                if remaining == 0 {
                    state = .finished
                    continue
                }
                let available = Int64(buffer.readableCount)
                if available == 0 {
                    return eof ? failure(400, "connection closed before the body was complete") : .needMore
                }
                let take = min(available, remaining)
                state = .contentLength(remaining: remaining - take)
                return .body(buffer.read(Int(take)))

            case .untilClose:
                if buffer.readableCount > 0 {
                    let (total, overflow) = chunkedTotal.addingReportingOverflow(Int64(buffer.readableCount))
                    guard !overflow, total <= maxBodyBytes else { return failure(413, "body too large") }
                    chunkedTotal = total
                    return .body(buffer.read(buffer.readableCount))
                }
                if eof {
                    state = .finished
                    continue
                }
                return .needMore

            case .chunkData(let remaining):
                if remaining == 0 {
                    state = .chunkDataEnd
                    continue
                }
                let available = Int64(buffer.readableCount)
                if available == 0 { return eof ? failure(400, "connection closed inside a chunk") : .needMore }
                let take = min(available, remaining)
                state = .chunkData(remaining: remaining - take)
                return .body(buffer.read(Int(take)))

            case .chunkDataEnd:
                guard let first = buffer.byte(at: 0) else {
                    return eof ? failure(400, "connection closed inside a chunk") : .needMore
                }
                guard first == HTTP1Grammar.cr else { return failure(400, "chunk data not followed by CRLF") }
                guard let second = buffer.byte(at: 1) else {
                    return eof ? failure(400, "connection closed inside a chunk") : .needMore
                }
                guard second == HTTP1Grammar.lf else { return failure(400, "chunk data not followed by CRLF") }
                buffer.consume(2)
                state = .chunkSizeLine

            case .chunkSizeLine:
                let limit = Self.maxChunkLineBytes
                var scanned = self.scanned
                let parsed: (size: Int64?, consumed: Int)? = buffer.withReadableBytes { bytes in
                    guard let lfOffset = HTTP1Grammar.findLineFeed(bytes, scanned: &scanned) else {
                        return bytes.count > limit + 1 ? (nil, 0) : nil
                    }
                    guard lfOffset <= limit + 1, let line = HTTP1Grammar.lineContent(bytes, lfOffset: lfOffset) else {
                        return (nil, 0)
                    }
                    return (HTTP1Grammar.parseChunkSizeLine(line), lfOffset + 1)
                }
                self.scanned = scanned
                guard let parsed else {
                    return eof ? failure(400, "connection closed inside a chunk size line") : .needMore
                }
                guard let size = parsed.size else { return failure(400, "invalid chunk size line") }
                buffer.consume(parsed.consumed)
                if size == 0 {
                    state = .trailers
                    continue
                }
                let (total, overflow) = chunkedTotal.addingReportingOverflow(size)
                guard !overflow, total <= maxBodyBytes else { return failure(413, "chunked body too large") }
                chunkedTotal = total
                state = .chunkData(remaining: size)

            case .trailers:
                var scanned = self.scanned
                let available = maxTrailerBytes - trailerBytes
                let outcome: (line: Result<HTTP1Grammar.FieldLine, HTTP1ParseError>?, consumed: Int)? =
                    buffer.withReadableBytes { bytes in
                        guard let lfOffset = HTTP1Grammar.findLineFeed(bytes, scanned: &scanned) else {
                            return bytes.count > available
                                ? (.failure(HTTP1ParseError(status: 431, reason: "trailer section too large")), 0) : nil
                        }
                        if lfOffset + 1 > available {
                            return (.failure(HTTP1ParseError(status: 431, reason: "trailer section too large")), 0)
                        }
                        guard let line = HTTP1Grammar.lineContent(bytes, lfOffset: lfOffset) else {
                            return (.failure(.badRequest("trailer line not ended by CRLF")), 0)
                        }
                        if line.isEmpty { return (nil, lfOffset + 1) }
                        return (HTTP1Grammar.parseFieldLine(line), lfOffset + 1)
                    }
                self.scanned = scanned
                guard let outcome else {
                    return eof ? failure(400, "connection closed inside the trailer section") : .needMore
                }
                switch outcome.line {
                case nil:
                    buffer.consume(outcome.consumed)
                    state = .finished
                case .failure(let error)?:
                    return failure(error.status, error.reason)
                case .success?:
                    trailerBytes += outcome.consumed
                    trailerCount += 1
                    guard trailerCount <= maxTrailers else { return failure(431, "too many trailer fields") }
                    buffer.consume(outcome.consumed)
                }
            }
        }
    }
}
