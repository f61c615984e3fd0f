import HTTPClientCore
import NetCore

/// Relays an upstream body that arrives as a stream to the client's response, with back-pressure both ways: an
/// upstream chunk is read only when the client's stream has room, so a slow client slows the upstream read (HTTP/1.1
/// stops reading the socket, HTTP/2 withholds WINDOW_UPDATE) instead of growing memory.
///
/// The relay runs on `loop` when given: the event loop both connections are served on, so a chunk goes from the
/// upstream socket's read to the client's write without leaving the thread (an unstructured task does not inherit the
/// caller's executor preference, and would run each step on Swift's global pool).
///
/// The relay owns the upstream exchange until the body ends; when the client goes away (the server drops the response
/// stream), the exchange is cancelled, which closes the upstream connection or resets its stream.
enum StreamedBodyRelay {
    /// How long a body may be and still be collected instead of relayed (one relay buffer's worth).
    static let collectLimit = 256 * 1024

    /// - Parameters:
    ///   - loop: where the relay runs; nil for Swift's global executor.
    ///   - log: told how the body ended and how many bytes were relayed.
    ///   - tunnel: the WebSocket tunnel whose upstream side this is (an accepted handshake's 101): it sees the bytes
    ///     pass, to send the client its Close at a frame boundary when the gateway drains.
    static func relay(
        _ upstream: HTTPClientStreamingResponse, on loop: EventLoop?, log: RelayedResponseLog? = nil,
        tunnel: WebSocketTunnel? = nil
    ) -> ByteStream {
        let (demand, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let output = ByteStream(onDemand: { signal.yield() }, onRelease: { signal.finish() })
        let client = WeakStream(output)
        tunnel?.attach(client: output)
        Task(executorPreference: loop) {
            defer { tunnel?.detach() }
            var demandSignals = demand.makeAsyncIterator()
            var relayed = 0
            do {
                while let chunk = try await upstream.body.next() {
                    // No strong reference to the client's stream may be held across the wait for demand: the
                    // server dropping it is what ends that wait.
                    guard let accepted = client.offer(chunk, through: tunnel) else {
                        log?.end(bytes: relayed, cut: clientGone)
                        return upstream.cancel()
                    }
                    relayed += chunk.count
                    if !accepted, await demandSignals.next() == nil {
                        log?.end(bytes: relayed, cut: clientGone)
                        return upstream.cancel()
                    }
                }
                client.stream?.finish()
                log?.end(bytes: relayed, cut: nil)
            } catch {
                client.stream?.fail(error)
                log?.end(
                    bytes: relayed,
                    cut: "upstream body cut: \((error as? HTTPClientError)?.description ?? "\(type(of: error))")")
            }
        }
        return output
    }

    /// Why a relayed body stopped when the client went away first (closed, reset, or cut at the send timeout).
    static let clientGone = "client gone during the body"
}

/// The client's response stream, held weakly so that the server dropping it is what tells the relay to stop.
private final class WeakStream: @unchecked Sendable {
    weak var stream: ByteStream?
    init(_ stream: ByteStream) { self.stream = stream }

    /// Hands `chunk` to the stream (through `tunnel`, which may hold it back once it goes away): true when it has
    /// room for more, false when the relay must wait for demand, nil when the server has dropped the stream. Holds
    /// the stream only for the call.
    func offer(_ chunk: [UInt8], through tunnel: WebSocketTunnel?) -> Bool? {
        guard let stream else { return nil }
        return tunnel?.offer(chunk, to: stream) ?? stream.yield(chunk)
    }
}
