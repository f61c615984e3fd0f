import Locking
import NetCore

/// Pulls a ``StreamedRequestBody`` one chunk at a time for one attempt of an exchange and hands each chunk to the
/// connection on its loop.
///
/// - Back-pressure by credit: the pump holds at most one chunk the connection has not taken. It pulls the next one
///   only after the connection called ``requestMore()`` (when its write queue, or the HTTP/2 stream's send queue, is
///   below its mark), so at most one chunk beyond the connection's mark is ever held in user space.
/// - Off the loop: the pulling runs in a task on the global executor, so a producer's own work (an `unfolding`
///   closure, a file read) never runs on a loop thread; files are read with ``OffLoopFile``. Each chunk costs one
///   hop to the loop.
/// - Framing checks: a body with a declared length that produces more or fewer bytes fails with
///   ``HTTPClientError/requestBodyFailed(reason:)``, before the offending bytes are handed over.
/// - ``stop()`` ends the pulling: a waiting pump returns, and the task is cancelled, which also ends an
///   `AsyncThrowingStream` being awaited.
final class RequestBodyPump: Sendable {
    /// What the pump hands to the connection, on the loop.
    enum Event: Sendable {
        /// The next chunk (never empty). The pump pulls no more until ``RequestBodyPump/requestMore()``.
        case chunk([UInt8])
        /// The body ended after `total` bytes (its declared length, when it had one).
        case end(total: Int64)
        /// The body could not be produced, or did not match its declared length.
        case failed(HTTPClientError)
    }

    /// Bytes read from a file per chunk.
    static let fileChunkSize = 128 * 1024

    private struct State {
        var credit = true
        var waiter: CheckedContinuation<Bool, Never>?
        var stopped = false
        var task: Task<Void, Never>?
    }

    private let state = Locked(State())

    private init() {}

    /// Starts pulling `body`; `onEvent` runs on `loop`, once per event. With `pullsOnLoop` the pulling task prefers
    /// `loop` itself instead of the global executor: for a producer that only hands over what the loop gave it (a
    /// tunnel's bytes), which then costs no thread hop per chunk.
    static func start(
        _ body: StreamedRequestBody, loop: EventLoop, pullsOnLoop: Bool = false,
        onEvent: @escaping (RequestBodyPump, Event) -> Void
    ) -> RequestBodyPump {
        let pump = RequestBodyPump()
        let handler = UncheckedSendable(onEvent)
        let executor: any TaskExecutor = pullsOnLoop ? loop : globalConcurrentExecutor
        let task = Task(executorPreference: executor) {
            await pump.run(body) { event in loop.execute { handler.value(pump, event) } }
        }
        let stopped = pump.state.withLock { state -> Bool in
            state.task = task
            return state.stopped
        }
        if stopped { task.cancel() }
        return pump
    }

    /// Lets the pump pull one more chunk.
    func requestMore() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiter else {
                state.credit = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: true)
    }

    /// Stops pulling; no event is sent after the current one, if any, is handled (the connection ignores late ones).
    func stop() {
        let (waiter, task) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, Task<Void, Never>?) in
            guard !state.stopped else { return (nil, nil) }
            state.stopped = true
            let waiter = state.waiter
            state.waiter = nil
            return (waiter, state.task)
        }
        waiter?.resume(returning: false)
        task?.cancel()
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    /// Waits for credit; false once stopped.
    private func awaitCredit() async -> Bool {
        let ready = state.withLock { state -> Bool? in
            if state.stopped { return false }
            guard state.credit else { return nil }
            state.credit = false
            return true
        }
        if let ready { return ready }
        return await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool? in
                if state.stopped { return false }
                guard state.credit else {
                    state.waiter = continuation
                    return nil
                }
                state.credit = false
                return true
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func run(_ body: StreamedRequestBody, deliver: (Event) -> Void) async {
        var reader = Reader(body)
        let length = body.length
        var total: Int64 = 0
        // One chunk per credit; each pass waits for the connection, so the loop ends with the body, a failure or stop.
        while await awaitCredit() {
            let chunk: [UInt8]?
            do {
                chunk = try await reader.next()
            } catch {
                if !isStopped { deliver(.failed(.requestBodyFailed(reason: "\(error)"))) }
                return
            }
            if isStopped { return }
            guard let chunk else {
                if let length, total != length {
                    deliver(
                        .failed(
                            .requestBodyFailed(reason: "the body ended after \(total) of its declared \(length) bytes"))
                    )
                } else {
                    deliver(.end(total: total))
                }
                return
            }
            if chunk.isEmpty {
                requestMore()
                continue
            }
            total += Int64(chunk.count)
            if let length, total > length {
                deliver(.failed(.requestBodyFailed(reason: "the body is longer than its declared \(length) bytes")))
                return
            }
            deliver(.chunk(chunk))
        }
    }

    /// Where the chunks come from.
    private enum Reader {
        case stream(AsyncThrowingStream<[UInt8], any Error>.AsyncIterator)
        case file(OffLoopFile, offset: Int64)

        init(_ body: StreamedRequestBody) {
            switch body {
            case .stream(let stream, _): self = .stream(stream.makeAsyncIterator())
            case .file(let file): self = .file(file, offset: 0)
            }
        }

        /// The next chunk, nil at the end. A file ends at the size it had when opened.
        mutating func next() async throws -> [UInt8]? {
            switch self {
            case .stream(var iterator):
                let chunk = try await iterator.next(isolation: #isolation)
                self = .stream(iterator)
                return chunk
            case .file(let file, let offset):
                guard offset < file.size else { return nil }
                let count = Int(min(Int64(RequestBodyPump.fileChunkSize), file.size - offset))
                let chunk = try await file.read(at: offset, maxCount: count)
                guard !chunk.isEmpty else { return nil }
                self = .file(file, offset: offset + Int64(chunk.count))
                return chunk
            }
        }
    }
}
