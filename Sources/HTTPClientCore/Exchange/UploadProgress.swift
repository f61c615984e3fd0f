/// The upload side of ``HTTPClientProgress`` for one exchange: body bytes count as sent once they are handed to the
/// socket (HTTP/1.1) or to the HTTP/2 stream's flow-control window, and are reported in steps (at least 64 KiB, or a
/// hundredth of a known total) plus once at the end with the total. Never reports less than before, also across a
/// retry. Loop thread only.
struct UploadProgress {
    private let callback: @Sendable (Int64, Int64?) -> Void
    private let total: Int64?
    private let step: Int64
    /// Body bytes of this attempt given to the connection or session.
    private(set) var queued: Int64 = 0
    /// Whether this attempt has given all of the body.
    private(set) var isComplete = false
    private var reported: Int64 = 0
    private var reportedComplete = false

    init(callback: @escaping @Sendable (Int64, Int64?) -> Void, total: Int64?) {
        self.callback = callback
        self.total = total
        step = max(64 * 1024, (total ?? 0) / 100)
    }

    /// A new attempt sends the body from its start.
    mutating func restart() {
        queued = 0
        isComplete = false
        reportedComplete = false
    }

    /// `count` more body bytes were given to the connection or session; `complete` when they were the last.
    mutating func queue(_ count: Int, complete: Bool = false) {
        queued += Int64(count)
        if complete { isComplete = true }
    }

    /// The body has ended (all of it was given).
    mutating func complete() { isComplete = true }

    /// Reports what is sent: everything queued except the `unsent` bytes still waiting in user space.
    mutating func update(unsent: Int) {
        let sent = max(0, queued - Int64(max(0, unsent)))
        if isComplete && sent == queued {
            // The last report, with the total (known now even for a body without a declared length).
            guard !reportedComplete else { return }
            reportedComplete = true
            reported = max(reported, sent)
            callback(sent, total ?? sent)
        } else if sent > reported && sent - reported >= step {
            reported = sent
            callback(sent, total)
        }
    }
}
