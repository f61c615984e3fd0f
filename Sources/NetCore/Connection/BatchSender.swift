import CNetShims

#if canImport(Glibc)
import Glibc
#endif

/// One event loop's io_uring for sending many connections' queued bytes in one system call, with the message headers
/// and `iovec`s those sends point at. Each send is non-blocking and completes within ``submit()``.
///
/// Loop thread only.
final class BatchSender {
    private let ring: OpaquePointer
    /// Sends per submission.
    let capacity: Int
    /// `iovec`s per send.
    static let iovecsPerSend = 8
    let messages: UnsafeMutablePointer<msghdr>
    private let iovecStorage: UnsafeMutablePointer<iovec>
    /// Per send slot of the batch at hand: whether it was queued, and whether its completion came back.
    let queued: UnsafeMutableBufferPointer<Bool>
    let sent: UnsafeMutableBufferPointer<Bool>

    /// A sender, or nil when io_uring is unavailable here.
    init?(capacity: Int = 64) {
        guard let ring = cns_uring_create(UInt32(capacity)) else { return nil }
        self.ring = ring
        self.capacity = Int(cns_uring_capacity(ring))
        messages = .allocate(capacity: self.capacity)
        iovecStorage = .allocate(capacity: self.capacity * Self.iovecsPerSend)
        queued = .allocate(capacity: self.capacity)
        queued.initialize(repeating: false)
        sent = .allocate(capacity: self.capacity)
        sent.initialize(repeating: false)
    }

    deinit {
        cns_uring_destroy(ring)
        messages.deallocate()
        iovecStorage.deallocate()
        queued.deallocate()
        sent.deallocate()
    }

    /// The `iovec`s of send `slot`.
    func iovecs(for slot: Int) -> UnsafeMutableBufferPointer<iovec> {
        UnsafeMutableBufferPointer(start: iovecStorage + slot * Self.iovecsPerSend, count: Self.iovecsPerSend)
    }

    /// Queues `sendmsg(fd, message)`; false when the queue is full.
    func queue(fd: Int32, message: UnsafeMutablePointer<msghdr>, tag: UInt64) -> Bool {
        cns_uring_queue_sendmsg(ring, fd, message, tag) == 0
    }

    /// Submits the queued sends: how many of them the kernel took (in the order queued), and whether it took them
    /// all. When it did not, the ring failed and nothing more may be queued on it; the sends it did not take were
    /// never seen by the kernel.
    func submit() -> (consumed: Int, succeeded: Bool) {
        var consumed: UInt32 = 0
        let result = cns_uring_submit(ring, &consumed)
        return (Int(consumed), result >= 0)
    }

    /// Makes the ring unusable, as a kernel refusing its calls would (for tests of the fallback).
    func breakRing() {
        let devNull = open("/dev/null", O_RDWR)
        guard devNull >= 0 else { return }
        dup2(devNull, cns_uring_fd(ring))
        close(devNull)
    }

    /// Waits until `count` sends have completed (non-blocking sends complete during ``submit()``; this only guards the
    /// memory they point at); false when the ring failed.
    func waitForCompletions(_ count: Int) -> Bool {
        cns_uring_wait(ring, UInt32(count)) >= 0
    }

    /// Whether a send's `result` says the ring cannot send at all here (a kernel without `IORING_OP_SENDMSG`, or a
    /// security policy refusing io_uring operations), rather than anything about the connection: the loop then stops
    /// using the ring and sends as it would without one.
    static func refusesSending(_ result: Int32) -> Bool {
        result == -EINVAL || result == -EOPNOTSUPP || result == -EPERM || result == -EACCES
    }

    /// Takes one completed send: its tag and result (bytes sent, or a negated `errno`).
    func takeCompletion(tag: inout UInt64, result: inout Int32) -> Bool {
        cns_uring_take_completion(ring, &tag, &result) == 1
    }
}
