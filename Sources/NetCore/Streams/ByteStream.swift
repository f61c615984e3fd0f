import DequeModule
import Locking

/// A single-consumer async stream of byte chunks with back-pressure: the producer (a connection on its loop) is told to
/// pause when more than `highWaterMark` bytes are buffered and to resume once the consumer has taken them below
/// `lowWaterMark`.
package final class ByteStream: AsyncSequence, Sendable {
    package typealias Element = [UInt8]

    private struct State {
        /// A taken chunk's slot lets go of it at once: a stream whose backlog never runs dry (a producer that refills as
        /// fast as the consumer takes) holds only the chunks not taken yet.
        var chunks = Deque<[UInt8]>()
        var buffered = 0
        var received = 0
        var finished = false
        var failure: (any Error)?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        var producerPaused = false
    }

    private let state = Locked(State())
    private let highWaterMark: Int
    private let lowWaterMark: Int
    /// Called (from the consumer's context) when a paused producer may produce again.
    private let onDemand: @Sendable () -> Void
    /// Called when the stream is deallocated: the consumer is gone (whether or not it read to the end).
    private let onRelease: @Sendable () -> Void

    /// Creates a stream.
    /// - Parameters:
    ///   - onDemand: called when the consumer has drained a paused producer's backlog.
    ///   - onRelease: called once, when the last reference to the stream goes away; a producer that holds the stream
    ///     only weakly learns here that nobody will read what it has not produced yet.
    package init(
        highWaterMark: Int = 256 * 1024, lowWaterMark: Int = 64 * 1024, onDemand: @escaping @Sendable () -> Void = {},
        onRelease: @escaping @Sendable () -> Void = {}
    ) {
        self.highWaterMark = highWaterMark
        self.lowWaterMark = lowWaterMark
        self.onDemand = onDemand
        self.onRelease = onRelease
    }

    deinit { onRelease() }

    /// A stream that already holds all of `bytes`.
    package static func complete(_ bytes: [UInt8]) -> ByteStream {
        let stream = ByteStream()
        if !bytes.isEmpty { _ = stream.yield(bytes) }
        stream.finish()
        return stream
    }

    /// Adds a chunk. Returns false when the producer should pause until `onDemand`.
    @discardableResult
    package func yield(_ chunk: [UInt8]) -> Bool {
        guard !chunk.isEmpty else { return true }
        let (waiter, keepGoing) = state.withLock { state -> (CheckedContinuation<[UInt8]?, any Error>?, Bool) in
            guard !state.finished else { return (nil, true) }
            state.received += chunk.count
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, true)
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            if state.buffered > highWaterMark {
                state.producerPaused = true
                return (nil, false)
            }
            return (nil, true)
        }
        waiter?.resume(returning: chunk)
        return keepGoing
    }

    /// Ends the stream normally.
    package func finish() { end(nil) }

    /// Ends the stream with an error the consumer will see after the buffered chunks.
    package func fail(_ error: any Error) { end(error) }

    private func end(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.failure = error
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
    }

    /// Whether the producer has finished (normally or not).
    package var isFinished: Bool { state.withLock { $0.finished } }

    /// The bytes the producer has added so far, taken or not (a body cut short: how much of it arrived).
    package var receivedByteCount: Int { state.withLock { $0.received } }

    /// The error the producer ended the stream with, if it failed.
    package var failure: (any Error)? { state.withLock { $0.failure } }

    /// The bytes added and not taken by the consumer yet (what the stream holds in memory now).
    package var bufferedByteCount: Int { state.withLock { $0.buffered } }

    private enum Step {
        case chunk([UInt8], resumeProducer: Bool)
        case end
        case failed(any Error)
        case wait
    }

    /// Takes the next buffered chunk or the end from `state`; `.wait` when there is neither.
    private func take(_ state: inout State) -> Step {
        if let chunk = state.chunks.popFirst() {
            state.buffered -= chunk.count
            var resume = false
            if state.producerPaused && state.buffered <= lowWaterMark {
                state.producerPaused = false
                resume = true
            }
            return .chunk(chunk, resumeProducer: resume)
        }
        if state.finished {
            if let failure = state.failure { return .failed(failure) }
            return .end
        }
        return .wait
    }

    /// The next chunk, or nil at the end.
    package func next() async throws -> [UInt8]? {
        let step = state.withLock { take(&$0) }
        switch step {
        case .chunk(let chunk, let resume):
            if resume { onDemand() }
            return chunk
        case .end:
            return nil
        case .failed(let error):
            throw error
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                let step = state.withLock { state -> Step in
                    let step = take(&state)
                    if case .wait = step { state.waiter = continuation }
                    return step
                }
                switch step {
                case .chunk(let chunk, let resume):
                    if resume { onDemand() }
                    continuation.resume(returning: chunk)
                case .end: continuation.resume(returning: nil)
                case .failed(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        }
    }

    /// Collects the whole stream, failing with ``ByteStreamError/tooLarge`` past `limit` bytes.
    package func collect(upTo limit: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let chunk = try await next() {
            guard bytes.count + chunk.count <= limit else { throw ByteStreamError.tooLarge }
            bytes.append(contentsOf: chunk)
        }
        return bytes
    }

    package struct AsyncIterator: AsyncIteratorProtocol {
        let stream: ByteStream
        package mutating func next() async throws -> [UInt8]? { try await stream.next() }
    }

    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }
}

/// Errors from ``ByteStream``.
package enum ByteStreamError: Error, Sendable, Hashable {
    /// The stream held more bytes than the caller allowed.
    case tooLarge
    /// The producer went away before finishing (connection closed or reset).
    case aborted
    /// The producer stopped sending for longer than allowed (the server's body timeout).
    case timedOut
    /// The producer sent bytes that break the stream's framing (a malformed chunk of a request body).
    case malformed
}
