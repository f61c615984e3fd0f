import HTTPClientCore
import Locking
import NetCore

/// Relays an upstream body to the client with buffering (see ``ResponseBuffering``), as nginx's `proxy_buffering`
/// does: the upstream is read as fast as it sends, whatever the client's pace, so that its connection goes back to the
/// pool (or its HTTP/2 stream ends) as soon as the body has been read.
///
/// Two tasks on the loop both connections use. The reader takes the upstream's chunks and hands each to the client's
/// stream while the stream has room (up to the plan's `memory`, its high-water mark): a client that keeps up gets
/// every chunk straight away, as without buffering. Once the stream is full, the chunks go to the response's
/// temporary file (made on first need, without a name) and the feeder hands them on from there whenever the stream
/// has room again, in order; when the feeder has caught up (nothing left in the file), the reader hands chunks over
/// itself again and the file is emptied. Past the file's or all files' cap, or when the file cannot be written, the
/// rest goes at the client's pace: the reader hands each chunk to the feeder and waits for it to be taken.
///
/// A client that leaves stops the upstream read at once (the exchange is cancelled) and the file closes. Every file
/// operation runs off the loop; the file closes when the body has been handed over, the client left, or the relay went.
final class BufferedBodyRelay: Sendable {
    struct State {
        /// Bytes written to the file (its length since it was last emptied), and how many of them went to the client.
        var written: Int64 = 0
        var fed: Int64 = 0
        /// Bytes of `max_temp_total` reserved for the file (its length).
        var reserved: Int64 = 0
        var file: TemporaryBufferFile?
        /// A chunk for the feeder to hand on at the client's pace (once buffering has stopped).
        var tail: [UInt8]?
        /// The feeder holds a piece it has not handed over yet.
        var feederBusy = false
        var feederStarted = false
        /// The client's stream has room (false from a full hand-over until the stream asks for more).
        var clientHasRoom = true
        /// How many times the stream asked for more: a hand-over that found it full marks it so only if it has not
        /// asked since the hand-over began (its request may come from another thread in between).
        var demands = 0
        /// Chunks go through the file (or the tail) and the feeder rather than straight to the client.
        var spilling = false
        /// No more buffering in files for this response.
        var capped = false
        var everSpilled = false
        var readerDone = false
        var failure: (any Error)?
        var clientGone = false
        /// The client's stream was finished or failed, or the client left: the access-log line is written.
        var ended = false
        var relayed = 0
        var memoryReported = 0
        /// The upstream response, while its body is being read (cancelled when the client leaves).
        var upstream: HTTPClientStreamingResponse?
    }

    /// What the reader does with its next chunk.
    enum Step {
        case direct(emptyFile: TemporaryBufferFile?)
        case spill(offset: Int64)
        case tail
        case gone
    }

    /// What the feeder does next.
    enum FeederStep {
        case read(TemporaryBufferFile, offset: Int64, count: Int)
        case give([UInt8])
        case finish(failure: (any Error)?)
        case wait
        case stop
    }

    let state = Locked(State())
    let buffering: ResponseBuffering
    let plan: ResponseBuffering.Plan
    let log: RelayedResponseLog?
    let client: WeakByteStream
    let feederWake: AsyncStream<Void>.Continuation
    let feederWakes: AsyncStream<Void>
    let readerWake: AsyncStream<Void>.Continuation
    let readerWakes: AsyncStream<Void>
    let loop: EventLoop?

    /// The most read from the file at once.
    static let pieceSize = 256 * 1024
    /// The most written to the file at once (chunks that are already waiting when one is written go with it).
    static let writeBatch = 256 * 1024

    init(
        buffering: ResponseBuffering, plan: ResponseBuffering.Plan, log: RelayedResponseLog?,
        upstream: HTTPClientStreamingResponse, loop: EventLoop?
    ) {
        self.buffering = buffering
        self.plan = plan
        self.log = log
        self.loop = loop
        client = WeakByteStream()
        (feederWakes, feederWake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (readerWakes, readerWake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.upstream = upstream }
    }

    deinit {
        let reserved = state.withLock { state in
            defer { state.reserved = 0 }
            return state.reserved
        }
        buffering.releaseDisk(reserved)
        let memory = state.withLock { $0.memoryReported }
        buffering.adjustMemory(by: -memory)
    }

    /// Starts relaying `upstream`'s body with `buffering`'s current plan; returns the client's stream.
    /// - Parameters:
    ///   - loop: where the relay runs; nil for Swift's global executor.
    ///   - log: told how the body ended and how many bytes were relayed.
    static func relay(
        _ upstream: HTTPClientStreamingResponse, buffering: ResponseBuffering, on loop: EventLoop?,
        log: RelayedResponseLog?
    ) -> ByteStream {
        let plan = buffering.plan()
        let relay = BufferedBodyRelay(buffering: buffering, plan: plan, log: log, upstream: upstream, loop: loop)
        let output = ByteStream(
            highWaterMark: plan.memory, lowWaterMark: max(1, plan.memory / 4),
            onDemand: { relay.clientWantsMore() }, onRelease: { relay.clientLeft() })
        relay.client.stream = output
        Task(executorPreference: loop) { await relay.read(upstream) }
        return output
    }

    // MARK: both ends

    /// Ends the client's stream (normally, or with the upstream's failure after what arrived before it).
    func finishClient(failure: (any Error)?) {
        if let failure { client.stream?.fail(failure) } else { client.stream?.finish() }
        closeFile()
        noteMemory(ending: true)
        let relayed = state.withLock { $0.relayed }
        if let failure {
            log?.end(
                bytes: relayed,
                cut: "upstream body cut: \((failure as? HTTPClientError)?.description ?? "\(type(of: failure))")")
        } else {
            log?.end(bytes: relayed, cut: nil)
        }
    }

    /// The client's stream has room again (drained below its low-water mark).
    func clientWantsMore() {
        state.withLock { state in
            state.clientHasRoom = true
            state.demands &+= 1
        }
        noteMemory()
        feederWake.yield()
    }

    /// The server dropped the client's stream (the client left, or the response was cut): the upstream read stops,
    /// the file closes, both tasks end.
    func clientLeft() {
        let (end, upstream) = state.withLock { state -> (Bool, HTTPClientStreamingResponse?) in
            state.clientGone = true
            defer { state.ended = true }
            return (!state.ended, state.upstream)
        }
        upstream?.cancel()
        feederWake.finish()
        readerWake.finish()
        guard end else { return }
        closeFile()
        noteMemory(ending: true)
        log?.end(bytes: state.withLock { $0.relayed }, cut: StreamedBodyRelay.clientGone)
    }

    /// Lets go of the file (it closes once no read holds it) and gives its space back.
    func closeFile() {
        let reserved = state.withLock { state -> Int64 in
            state.file = nil
            defer { state.reserved = 0 }
            return state.reserved
        }
        buffering.releaseDisk(reserved)
    }

    /// Tells ``ResponseBuffering`` how much this response holds in memory now (none once it has ended).
    func noteMemory(ending: Bool = false) {
        let held = ending ? 0 : (client.stream?.bufferedByteCount ?? 0) + state.withLock { $0.tail?.count ?? 0 }
        let delta = state.withLock { state -> Int in
            defer { state.memoryReported = held }
            return held - state.memoryReported
        }
        buffering.adjustMemory(by: delta)
    }
}

/// The client's response stream, held weakly so that the server dropping it is what tells the relay the client left.
final class WeakByteStream: @unchecked Sendable {
    // Set once, before either task starts; read by them after.
    weak var stream: ByteStream?

    /// Hands `chunk` to the stream: true when it has room for more, false when it is full, nil when the server has
    /// dropped it. Holds the stream only for the call.
    func offer(_ chunk: [UInt8]) -> Bool? {
        guard let stream else { return nil }
        return stream.yield(chunk)
    }
}
