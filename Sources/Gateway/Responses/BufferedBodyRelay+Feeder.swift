import HTTPClientCore
import Locking
import NetCore

/// The feeder: what the file holds to the client's stream, in order, whenever the stream has room.
extension BufferedBodyRelay {
    func startFeeder() {
        let start = state.withLock { state -> Bool in
            defer { state.feederStarted = true }
            return !state.feederStarted
        }
        guard start else { return }
        Task(executorPreference: loop) { await self.feed() }
    }

    func feed() async {
        var wakes = feederWakes.makeAsyncIterator()
        while true {
            let next = state.withLock { state -> FeederStep in
                if state.ended || state.clientGone { return .stop }
                if state.clientHasRoom, state.fed < state.written, let file = state.file {
                    state.feederBusy = true
                    return .read(
                        file, offset: state.fed, count: Int(min(state.written - state.fed, Int64(Self.pieceSize))))
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
    func give(_ piece: [UInt8], fromFile: Int) -> Bool {
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
    func fileReadFailed(_ error: any Error) {
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
}
