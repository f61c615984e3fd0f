import HTTPClientCore
import Locking
import NetCore

/// The reader: the upstream's chunks to the client's stream while it has room, else to the file (or, past its
/// caps, to the feeder at the client's pace).
extension BufferedBodyRelay {
    func read(_ upstream: HTTPClientStreamingResponse) async {
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
    func reserveMore(_ count: Int, fileEnd: Int64) -> Bool {
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
    func step(for count: Int) -> Step {
        var overflow: ResponseBuffering.Overflow?
        let step = state.withLock { state -> Step in
            if state.clientGone { return .gone }
            if state.spilling, state.fed == state.written, state.tail == nil, !state.feederBusy, state.clientHasRoom,
                !state.capped
            {
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
    func hand(_ chunk: [UInt8]) -> Bool {
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
    func spill(_ chunk: [UInt8], at offset: Int64) async -> Bool {
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
    func pass(_ chunk: [UInt8]) -> Bool {
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
    func readerEnded(failure: (any Error)?) {
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
}
