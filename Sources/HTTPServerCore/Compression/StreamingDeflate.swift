import HTTPWire
import Locking
import NetCore

/// Compresses a streamed body into a new ``ByteStream``, chunk by chunk, with back-pressure both ways.
///
/// Each source chunk is compressed and sync-flushed, so whatever the handler has produced reaches the client without
/// waiting for more (a slow stream is not held back); the gzip or zlib trailer follows the source's end. A failing
/// source fails the output (the connection then ends the response without its end marker). When the consumer drops
/// the output (the connection closed), the pump stops at its next step instead of waiting for demand forever.
enum StreamingDeflate {
    /// Returns the compressed stream of `source`; the pump runs as a task preferring `loop`.
    static func compress(_ source: ByteStream, coding: ContentCoding, level: Int32, loop: EventLoop) -> ByteStream {
        let demand = DemandSignal()
        let lifetime = ConsumerLifetime(demand)
        let output = ByteStream(onDemand: { lifetime.signal.resume() })
        Task(executorPreference: loop) { [weak output] in
            let deflater: Deflater
            do {
                deflater = try Deflater(coding: coding, level: level)
            } catch {
                output?.fail(error)
                return
            }
            do {
                while let chunk = try await source.next() {
                    let bytes = try deflater.flush(chunk)
                    // Only a weak reference across the wait: the consumer dropping the stream must cancel it.
                    guard let accepted = output?.yield(bytes) else { return }
                    if !accepted, await !demand.wait() { return }
                }
                let tail = try deflater.finish()
                guard let accepted = output?.yield(tail) else { return }
                if !accepted, await !demand.wait() { return }
                output?.finish()
            } catch {
                output?.fail(error)
            }
        }
        return output
    }
}

/// Wakes a paused producer: `resume()` when the consumer wants more, `cancel()` when it is gone for good.
final class DemandSignal: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Bool, Never>?
        var resumed = false
        var cancelled = false
    }

    private let state = Locked(State())

    /// Lets the producer go on (now, or at its next `wait()`).
    func resume() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter else {
                state.resumed = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: true)
    }

    /// Tells the producer the consumer is gone.
    func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.cancelled = true
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: false)
    }

    /// Waits for `resume()` (true) or `cancel()` (false).
    func wait() async -> Bool {
        await withCheckedContinuation { continuation in
            let immediate = state.withLock { state -> Bool? in
                if state.cancelled { return false }
                if state.resumed {
                    state.resumed = false
                    return true
                }
                state.waiter = continuation
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }
}

/// Owned by the output stream's demand callback: released with the stream, it cancels the signal, so a producer
/// waiting for a consumer that went away is woken.
final class ConsumerLifetime: Sendable {
    let signal: DemandSignal

    init(_ signal: DemandSignal) { self.signal = signal }

    deinit { signal.cancel() }
}
