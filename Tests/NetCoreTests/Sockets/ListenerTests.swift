import Locking
import NetCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ListenerTests {
    func listen(_ port: Int, joining: Bool, on loop: EventLoop) async throws -> UncheckedSendable<Listener> {
        try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                continuation.resume(
                    with: Result {
                        try UncheckedSendable(
                            Listener(
                                address: SocketAddress(numericHost: "127.0.0.1", port: port)!, loop: loop,
                                joiningOwnListener: joining
                            ) { fd, _ in close(fd) })
                    })
            }
        }
    }

    @Test func aBoundPortIsRefusedUnlessJoiningOwnListener() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let first = try await listen(0, joining: false, on: loop)
        let port = first.value.address.port
        do {
            _ = try await listen(port, joining: false, on: loop)
            Issue.record("a second listener bound port \(port)")
        } catch let error as SystemError {
            #expect(error.errno == EADDRINUSE)
        }
        let joined = try await listen(port, joining: true, on: loop)
        #expect(joined.value.address.port == port)
        let third = await withCheckedContinuation { continuation in
            loop.execute {
                first.value.close()
                joined.value.close()
                continuation.resume(
                    returning: Result { try Socket.listen(on: SocketAddress(numericHost: "127.0.0.1", port: port)!) })
            }
        }
        let fd = try third.get()
        #expect(fd >= 0, "the port is free again once our listeners closed")
        close(fd)
    }
}
