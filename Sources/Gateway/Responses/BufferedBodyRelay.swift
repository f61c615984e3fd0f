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
    private struct State {
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
    private enum Step {
        case direct(emptyFile: TemporaryBufferFile?)
        case spill(offset: Int64)
        case tail
        case gone
    }

    /// What the feeder does next.
    private enum FeederStep {
        case read(TemporaryBufferFile, offset: Int64, count: Int)
        case give([UInt8])
        case finish(failure: (any Error)?)
        case wait
        case stop
    }

    private let state = Locked(State())
    private let buffering: ResponseBuffering
    private let plan: ResponseBuffering.Plan
    private let log: RelayedResponseLog?
    private let client: WeakByteStream
    private let feederWake: AsyncStream<Void>.Continuation
    private let feederWakes: AsyncStream<Void>
    private let readerWake: AsyncStream<Void>.Continuation
    private let readerWakes: AsyncStream<Void>
    private let loop: EventLoop?

    /// The most read from the file at once.
    static let pieceSize = 256 * 1024
    /// The most written to the file at once (chunks that are already waiting when one is written go with it).
    static let writeBatch = 256 * 1024

    private init(buffering: ResponseBuffering, plan: ResponseBuffering.Plan, log: RelayedResponseLog?,
                 upstream: HTTPClientStreamingResponse, loop: EventLoop?) {
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
    static func relay(_ upstream: HTTPClientStreamingResponse, buffering: ResponseBuffering, on loop: EventLoop?,
                      log: RelayedResponseLog?) -> ByteStream {
        let plan = buffering.plan()
        let relay = BufferedBodyRelay(buffering: buffering, plan: plan, log: log, upstream: upstream, loop: loop)
        let output = ByteStream(highWaterMark: plan.memory, lowWaterMark: max(1, plan.memory / 4),
                                onDemand: { relay.clientWantsMore() }, onRelease: { relay.clientLeft() })
        relay.client.stream = output
        Task(executorPreference: loop) { await relay.read(upstream) }
        return output
    }

    // MARK: reader

    private func read(_ upstream: HTTPClientStreamingResponse) async {
        var wakes = readerWakes.makeAsyncIterator()
        var failure: (any Error)?
        // A chunk already taken from the upstream that goes next.
        var taken: [UInt8]?
        reading: while true {
            let chunk: [UInt8]
            if let held = taken {
                chunk = held
                taken = nil
            } else {
                do {
                    guard let next = try await upstream.body.next() else { break reading }
                    chunk = next
                } catch {
                    failure = error
                    break reading
                }
            }
            var toPass: [UInt8]?
            var ended = false
            switch step(for: chunk.count) {
            case .gone:
                return upstream.cancel()
            case .direct(let emptied):
                if let emptied { await emptied.truncate() }
                guard hand(chunk) else { return upstream.cancel() }
            case .spill(let offset):
                // The chunks already waiting behind this one go to the file with it, in one write: fewer trips off
                // the loop, and no wait for bytes that have not come.
                var batch = chunk
                while batch.count < Self.writeBatch, upstream.body.bufferedByteCount > 0 {
                    let more: [UInt8]?
                    do {
                        more = try await upstream.body.next()
                    } catch {
                        failure = error
                        ended = true
                        break
                    }
                    guard let more else {
                        ended = true
                        break
                    }
                    guard reserveMore(more.count, fileEnd: offset + Int64(batch.count)) else {
                        taken = more
                        break
                    }
                    batch.append(contentsOf: more)
                }
                if await !spill(batch, at: offset) { toPass = batch }
            case .tail:
                toPass = chunk
            }
            if let toPass {
                // At the client's pace: the feeder takes the chunk when the client's stream has room.
                guard pass(toPass) else { return upstream.cancel() }
                while state.withLock({ $0.tail != nil && !$0.clientGone }) {
                    if await wakes.next() == nil { break }
                }
                if state.withLock({ $0.clientGone }) { return upstream.cancel() }
            }
            if ended { break reading }
        }
        readerEnded(failure: failure)
    }

    /// Reserves the file space of `count` more bytes for a write that ends at `fileEnd` so far; false (buffering
    /// stopped, unless the client left) when a cap is reached.
    private func reserveMore(_ count: Int, fileEnd: Int64) -> Bool {
        var overflow: ResponseBuffering.Overflow?
        let reserved = state.withLock { state -> Bool in
            if state.clientGone || state.capped { return false }
            let size = Int64(count)
            guard fileEnd + size <= plan.maxFileSize else {
                state.capped = true
                overflow = .fileSize
                return false
            }
            guard buffering.reserveDisk(size) else {
                state.capped = true
                overflow = .total
                return false
            }
            state.reserved += size
            return true
        }
        if let overflow { buffering.overflowed(overflow) }
        return reserved
    }

    /// Decides where the next chunk of `count` bytes goes (reserving its file space when it goes to the file).
    private func step(for count: Int) -> Step {
        var overflow: ResponseBuffering.Overflow?
        let step = state.withLock { state -> Step in
            if state.clientGone { return .gone }
            if state.spilling, state.fed == state.written, state.tail == nil, !state.feederBusy, state.clientHasRoom,
               !state.capped {
                // The feeder has caught up: straight to the client again, and the file's space back.
                state.spilling = false
                if state.written > 0 {
                    buffering.releaseDisk(state.reserved)
                    state.reserved = 0
                    state.written = 0
                    state.fed = 0
                    return .direct(emptyFile: state.file)
                }
            }
            if !state.spilling { return .direct(emptyFile: nil) }
            if state.capped { return .tail }
            let size = Int64(count)
            guard state.written + size <= plan.maxFileSize else {
                state.capped = true
                if plan.maxFileSize > 0 { overflow = .fileSize }
                return .tail
            }
            guard buffering.reserveDisk(size) else {
                state.capped = true
                overflow = .total
                return .tail
            }
            state.reserved += size
            return .spill(offset: state.written)
        }
        if let overflow { buffering.overflowed(overflow) }
        return step
    }

    /// Hands `chunk` straight to the client; false when the client has left.
    private func hand(_ chunk: [UInt8]) -> Bool {
        let demands = state.withLock { $0.demands }
        guard let accepted = client.offer(chunk) else {
            clientLeft()
            return false
        }
        state.withLock { state in
            state.relayed += chunk.count
            if !accepted {
                // Full: the next chunks go to the file until the feeder catches up.
                if state.demands == demands { state.clientHasRoom = false }
                state.spilling = true
            }
        }
        noteMemory()
        return true
    }

    /// Writes `chunk` to the file at `offset` (its space reserved), making the file first if need be; false, with
    /// the reservation given back and buffering stopped, when the file cannot be made or written.
    private func spill(_ chunk: [UInt8], at offset: Int64) async -> Bool {
        var file = state.withLock { $0.file }
        do {
            if file == nil {
                let made = try await TemporaryBufferFile.make(in: plan.directory)
                file = made
                state.withLock { $0.file = made }
            }
            guard let file else { return false }
            try await file.write(chunk, at: offset)
        } catch {
            // Its space back (unless the client left meanwhile, and all of it went back then).
            let unused = state.withLock { state -> Int64 in
                let unused = min(Int64(chunk.count), state.reserved)
                state.reserved -= unused
                state.capped = true
                return unused
            }
            buffering.releaseDisk(unused)
            buffering.overflowed(.error)
            buffering.fileFailed(error)
            return false
        }
        let first = state.withLock { state -> Bool in
            state.written = offset + Int64(chunk.count)
            defer { state.everSpilled = true }
            return !state.everSpilled
        }
        if first { buffering.spilled() }
        startFeeder()
        feederWake.yield()
        return true
    }

    /// Hands `chunk` to the feeder (the reader then waits until it has been taken); false when the client left.
    private func pass(_ chunk: [UInt8]) -> Bool {
        let gone = state.withLock { state -> Bool in
            if state.clientGone { return true }
            state.tail = chunk
            return false
        }
        if gone { return false }
        noteMemory()
        startFeeder()
        feederWake.yield()
        return true
    }

    /// The upstream body ended (with `failure`, when it was cut): the client's stream ends here when nothing waits
    /// for it, else once the feeder has handed everything on.
    private func readerEnded(failure: (any Error)?) {
        let finishHere = state.withLock { state -> Bool in
            state.readerDone = true
            state.failure = failure
            state.upstream = nil
            guard !state.ended, !state.clientGone, state.fed == state.written, state.tail == nil, !state.feederBusy
            else { return false }
            state.ended = true
            return true
        }
        if finishHere {
            finishClient(failure: failure)
            feederWake.finish()
        } else {
            feederWake.yield()
        }
    }

    // MARK: feeder

    private func startFeeder() {
        let start = state.withLock { state -> Bool in
            defer { state.feederStarted = true }
            return !state.feederStarted
        }
        guard start else { return }
        Task(executorPreference: loop) { await self.feed() }
    }

    private func feed() async {
        var wakes = feederWakes.makeAsyncIterator()
        while true {
            let next = state.withLock { state -> FeederStep in
                if state.ended || state.clientGone { return .stop }
                if state.clientHasRoom, state.fed < state.written, let file = state.file {
                    state.feederBusy = true
                    return .read(file, offset: state.fed, count: Int(min(state.written - state.fed, Int64(Self.pieceSize))))
                }
                if state.clientHasRoom, let tail = state.tail {
                    state.tail = nil
                    state.feederBusy = true
                    return .give(tail)
                }
                if state.readerDone, state.fed == state.written, state.tail == nil {
                    state.ended = true
                    return .finish(failure: state.failure)
                }
                return .wait
            }
            switch next {
            case .stop:
                return
            case .wait:
                if await wakes.next() == nil { return }
            case .finish(let failure):
                finishClient(failure: failure)
                return
            case .give(let chunk):
                readerWake.yield()
                guard give(chunk, fromFile: 0) else { return }
            case .read(let file, let offset, let count):
                let piece: [UInt8]
                do {
                    piece = try await file.read(at: offset, count: count)
                } catch {
                    fileReadFailed(error)
                    return
                }
                guard give(piece, fromFile: count) else { return }
            }
        }
    }

    /// Hands a piece to the client (`fromFile` of its bytes read from the file); false when the client has left.
    private func give(_ piece: [UInt8], fromFile: Int) -> Bool {
        let demands = state.withLock { $0.demands }
        let accepted = client.offer(piece)
        state.withLock { state in
            state.feederBusy = false
            guard accepted != nil else { return }
            state.fed += Int64(fromFile)
            state.relayed += piece.count
            if accepted == false, state.demands == demands { state.clientHasRoom = false }
        }
        guard accepted != nil else {
            clientLeft()
            return false
        }
        noteMemory()
        return true
    }

    /// The file could not be read back: the client's response is cut (its stream fails) and the upstream read stops.
    private func fileReadFailed(_ error: any Error) {
        let (end, upstream) = state.withLock { state -> (Bool, HTTPClientStreamingResponse?) in
            state.feederBusy = false
            defer { state.ended = true }
            return (!state.ended, state.upstream)
        }
        upstream?.cancel()
        buffering.fileFailed(error)
        guard end else { return }
        client.stream?.fail(error)
        closeFile()
        noteMemory(ending: true)
        log?.end(bytes: state.withLock { $0.relayed }, cut: "temporary file read failed")
        readerWake.finish()
    }

    // MARK: both ends

    /// Ends the client's stream (normally, or with the upstream's failure after what arrived before it).
    private func finishClient(failure: (any Error)?) {
        if let failure { client.stream?.fail(failure) } else { client.stream?.finish() }
        closeFile()
        noteMemory(ending: true)
        let relayed = state.withLock { $0.relayed }
        if let failure {
            log?.end(bytes: relayed,
                     cut: "upstream body cut: \((failure as? HTTPClientError)?.description ?? "\(type(of: failure))")")
        } else {
            log?.end(bytes: relayed, cut: nil)
        }
    }

    /// The client's stream has room again (drained below its low-water mark).
    private func clientWantsMore() {
        state.withLock { state in
            state.clientHasRoom = true
            state.demands &+= 1
        }
        noteMemory()
        feederWake.yield()
    }

    /// The server dropped the client's stream (the client left, or the response was cut): the upstream read stops,
    /// the file closes, both tasks end.
    private func clientLeft() {
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
    private func closeFile() {
        let reserved = state.withLock { state -> Int64 in
            state.file = nil
            defer { state.reserved = 0 }
            return state.reserved
        }
        buffering.releaseDisk(reserved)
    }

    /// Tells ``ResponseBuffering`` how much this response holds in memory now (none once it has ended).
    private func noteMemory(ending: Bool = false) {
        let held = ending ? 0 : (client.stream?.bufferedByteCount ?? 0) + state.withLock { $0.tail?.count ?? 0 }
        let delta = state.withLock { state -> Int in
            defer { state.memoryReported = held }
            return held - state.memoryReported
        }
        buffering.adjustMemory(by: delta)
    }
}

/// The client's response stream, held weakly so that the server dropping it is what tells the relay the client left.
private final class WeakByteStream: @unchecked Sendable {
    // Set once, before either task starts; read by them after.
    weak var stream: ByteStream?

    /// Hands `chunk` to the stream: true when it has room for more, false when it is full, nil when the server has
    /// dropped it. Holds the stream only for the call.
    func offer(_ chunk: [UInt8]) -> Bool? {
        guard let stream else { return nil }
        return stream.yield(chunk)
    }
}
