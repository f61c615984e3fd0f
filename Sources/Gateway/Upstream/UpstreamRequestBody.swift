import HTTPServerCore
import Locking
import NetCore

/// A client's request body relayed to the upstream as it arrives, instead of being collected first: the upstream
/// connection pulls a chunk only when it has room to send it, and the client's connection is read only as chunks are
/// pulled, so a slow upstream slows the client's upload (back-pressure both ways) and memory stays bounded whatever
/// the body's size.
///
/// Bodies of unknown length (chunked, or HTTP/2 without `Content-Length`) still in flight and bodies declared longer
/// than ``collectLimit`` are relayed; shorter ones are collected, so they can be retried and sent with the head in one
/// write. Once a relayed body has started to flow it is not sent again (no retry, no challenge answered; an attempt
/// whose connection could not be opened is retried as usual), and its size is checked against the
/// server's `max_body_bytes` as it flows.
final class UpstreamRequestBody: Sendable {
    /// The longest declared body that is collected rather than relayed.
    static let collectLimit: Int64 = 256 * 1024

    private let source: ByteStream
    private let limit: Int
    /// The client's `Content-Length`, sent on as the upstream's; nil sends the body chunked.
    let declaredLength: Int64?
    private let counters = Locked(Counters())

    private struct Counters {
        var bytes = 0
        var exceededLimit = false
    }

    private init(source: ByteStream, limit: Int, declaredLength: Int64?) {
        self.source = source
        self.limit = limit
        self.declaredLength = declaredLength
    }

    /// A relay for `request`'s body, or nil when it is better collected: no body, a body already complete, or one
    /// declared no longer than ``collectLimit``.
    static func relaying(_ request: HTTPServerRequest, limit: Int) -> UpstreamRequestBody? {
        if let declared = request.declaredBodyLength {
            guard declared > collectLimit else { return nil }
        } else if request.bodyIsFinished {
            return nil
        }
        return UpstreamRequestBody(source: request.body, limit: limit, declaredLength: request.declaredBodyLength)
    }

    /// The chunks for the upstream request. Failing with ``ByteStreamError/tooLarge`` past the limit, or with the
    /// client's own failure (connection closed mid-body), fails the upstream request.
    func makeStream() -> AsyncThrowingStream<[UInt8], any Error> {
        AsyncThrowingStream(unfolding: { [self] in
            let chunk: [UInt8]?
            do {
                chunk = try await source.next()
            } catch ByteStreamError.tooLarge {
                // The server's own framing check (a chunked body past `max_body_bytes`) saw it first.
                counters.withLock { $0.exceededLimit = true }
                throw ByteStreamError.tooLarge
            }
            guard let chunk else { return nil }
            let overLimit = counters.withLock { counters -> Bool in
                counters.bytes += chunk.count
                if counters.bytes > limit { counters.exceededLimit = true }
                return counters.exceededLimit
            }
            if overLimit { throw ByteStreamError.tooLarge }
            return chunk
        })
    }

    /// The bytes relayed so far.
    var bytesRelayed: Int { counters.withLock { $0.bytes } }

    /// Whether the body went past the server's `max_body_bytes` (the client gets 413).
    var exceededLimit: Bool { counters.withLock { $0.exceededLimit } }
}
