import Locking
import Testing

@testable import NetCore

#if canImport(Glibc)
import Glibc
#endif

/// The loop's end-of-round flush, which sends for many connections at once (one io_uring call when the kernel allows
/// it, one `sendmsg` each otherwise): every byte arrives in order, whatever the number of buffers queued, a send the
/// socket cannot take whole, or a peer that went away in the same round.
@Suite struct BatchedSendTests {
    /// Records how each connection ended.
    private final class Recorder: ConnectionDelegate, @unchecked Sendable {
        let closes = Locked<[Int32: String]>([:])
        func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {}
        func connectionDidClose(_ connection: Connection, error: (any Error)?) {
            closes.withLock { $0[Int32(connection.remoteAddress?.port ?? -1)] = error.map { "\($0)" } ?? "closed" }
        }
    }

    /// A stream socket pair: the loop's end and the test's end.
    private static func socketPair() throws -> (loopEnd: Int32, testEnd: Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            throw SystemError.last("socketpair")
        }
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    /// Reads `fd` until EOF, `count` bytes or 10 s of silence (blocking this thread; the loop runs on its own).
    private static func readAll(_ fd: Int32, count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while received.count < count, poll(&poller, 1, 10_000) > 0 {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            received.append(contentsOf: buffer[0..<n])
        }
        return received
    }

    /// The bytes connection `index` is sent: `pieces` buffers, the last `tail` bytes long, all numbered.
    private static func payload(_ index: Int) -> [[UInt8]] {
        let pieces = index % 3 == 0 ? 20 : 3  // more buffers than one send describes
        let tail = index % 4 == 0 ? 3 << 20 : 100  // more than the socket takes at once
        return (0..<pieces).map { piece in
            let length = piece == pieces - 1 ? tail : 1 + (index * 7 + piece) % 200
            return (0..<length).map { UInt8(truncatingIfNeeded: index &* 31 &+ piece &* 7 &+ $0) }
        }
    }

    @Test(arguments: [true, false])
    func everyConnectionWrittenInOneRoundReceivesItsBytesInOrder(batched: Bool) async throws {
        let loop = try EventLoop(batchedSends: batched)
        defer { loop.shutdown() }
        if !batched { #expect(!loop.sendsInBatches) }
        let count = 24
        let pairs = try (0..<count).map { _ in try Self.socketPair() }
        let recorder = Recorder()
        // One peer is gone before the round: its send fails, the others in the same batch are not disturbed.
        let gone = 5
        close(pairs[gone].testEnd)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                for (index, pair) in pairs.enumerated() {
                    let connection = try! Connection(
                        acceptedFD: pair.loopEnd, loop: loop,
                        remoteAddress: SocketAddress(numericHost: "127.0.0.1", port: index),
                        tls: nil)
                    connection.delegate = recorder
                    try! connection.start()
                    for piece in Self.payload(index) { connection.write(piece) }
                }
                continuation.resume()
            }
        }
        for index in 0..<count where index != gone {
            let expected = Self.payload(index).flatMap { $0 }
            let received = Self.readAll(pairs[index].testEnd, count: expected.count)
            let same = received == expected
            let firstDifference =
                same ? nil : zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(
                same,
                "connection \(index): \(received.count) of \(expected.count) bytes, first difference at \(firstDifference ?? -1)"
            )
            close(pairs[index].testEnd)
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while recorder.closes.withLock({ $0[Int32(gone)] == nil }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let closed = recorder.closes.withLock { $0[Int32(gone)] }
        #expect(closed != nil, "the connection whose peer had gone closed")
    }

    /// A send the kernel refuses as a whole (no `IORING_OP_SENDMSG`, or a policy refusing io_uring operations) is not
    /// the connection's failure: its bytes go out with a plain `sendmsg`, and the connection stays open.
    @Test(arguments: [EINVAL, EOPNOTSUPP, EPERM, EACCES])
    func aRefusedBatchedSendFallsBackToAPlainSend(code: Int32) async throws {
        #expect(BatchSender.refusesSending(-code))
        let loop = try EventLoop(batchedSends: false)
        defer { loop.shutdown() }
        let pair = try Self.socketPair()
        defer { close(pair.testEnd) }
        let recorder = Recorder()
        let bytes = Array("refused, then sent".utf8)
        let open: Bool = await withCheckedContinuation { continuation in
            loop.execute {
                let connection = try! Connection(acceptedFD: pair.loopEnd, loop: loop, remoteAddress: nil, tls: nil)
                connection.delegate = recorder
                try! connection.start()
                connection.write(bytes)
                let message = UnsafeMutablePointer<msghdr>.allocate(capacity: 1)
                let iovecs = UnsafeMutableBufferPointer<iovec>.allocate(capacity: 4)
                defer {
                    message.deallocate()
                    iovecs.deallocate()
                }
                #expect(connection.prepareBatchedFlush(message, iovecs: iovecs))
                connection.finishBatchedFlush(result: -code)
                continuation.resume(returning: !connection.isClosed)
            }
        }
        #expect(open)
        #expect(Self.readAll(pair.testEnd, count: bytes.count) == bytes)
        #expect(recorder.closes.withLock { $0.isEmpty })
    }

    /// A ring that fails as a whole (here: its descriptor replaced, as a kernel refusing the calls would answer) is
    /// given up on: the sends it never took go out one `sendmsg` each, in the same round and after it, and no
    /// connection is lost.
    @Test(.enabled(if: BatchSender() != nil, "io_uring is not available here"))
    func aRingThatFailsIsGivenUpOnWithoutLosingAByte() async throws {
        let loop = try EventLoop(batchedSends: true)
        defer { loop.shutdown() }
        #expect(loop.sendsInBatches)
        let count = 10
        let pairs = try (0..<count).map { _ in try Self.socketPair() }
        let recorder = Recorder()
        let open = OpenConnections()
        let rounds = 2
        for round in 0..<rounds {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                loop.execute {
                    if round == 0 {
                        loop.breakBatchedSendsForTesting()
                    }
                    for (index, pair) in pairs.enumerated() {
                        let connection: Connection
                        if round == 0 {
                            connection = try! Connection(
                                acceptedFD: pair.loopEnd, loop: loop,
                                remoteAddress: SocketAddress(numericHost: "127.0.0.1", port: index),
                                tls: nil)
                            connection.delegate = recorder
                            try! connection.start()
                            open.byIndex[index] = connection
                        } else {
                            connection = open.byIndex[index]!
                        }
                        connection.write(Array("round \(round) connection \(index);".utf8))
                    }
                    continuation.resume()
                }
            }
        }
        for (index, pair) in pairs.enumerated() {
            let expected = (0..<rounds).flatMap { Array("round \($0) connection \(index);".utf8) }
            #expect(Self.readAll(pair.testEnd, count: expected.count) == expected, "connection \(index)")
        }
        #expect(recorder.closes.withLock { $0.isEmpty }, "no connection closed")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                for connection in open.byIndex.values { connection.close() }
                continuation.resume()
            }
        }
        for pair in pairs { close(pair.testEnd) }
    }

    /// Connections a test keeps between jobs on its loop (touched on the loop thread only).
    private final class OpenConnections: @unchecked Sendable {
        var byIndex: [Int: Connection] = [:]
    }
}
