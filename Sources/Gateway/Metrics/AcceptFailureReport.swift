import Foundation
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Says on stderr that the listeners cannot accept connections for want of file descriptors (or memory), at most once
/// per ``interval``: the first failure at once, the ones after it summed up in one line when the interval has passed.
/// The gateway's log may be the very file it cannot open more of, and an operator must learn why clients hang in the
/// listen backlog; the failures are counted in `moya_gateway_accepts_refused_total` as well.
///
/// ``record(errno:)`` is called on a loop thread and never blocks it: lines are written on a queue of their own.
final class AcceptFailureReport: Sendable {
    private struct State {
        /// Failures not reported yet, and the last one's `errno`.
        var unreported = 0
        var lastErrno: Int32 = 0
        var lastReport: ContinuousClock.Instant?
        /// A summary is scheduled for the end of the interval.
        var summaryScheduled = false
    }

    private let state = Locked(State())
    private let interval: Duration
    private let queue = DispatchQueue(label: "moya-gateway.accept-failure-report")
    private let write: @Sendable (String) -> Void

    /// `write` takes each line (without its newline); by default it goes to stderr.
    init(
        interval: Duration = .seconds(60),
        write: @escaping @Sendable (String) -> Void = AcceptFailureReport.standardError
    ) {
        self.interval = interval
        self.write = write
    }

    /// Counts one accept that failed with `errno`; reports it now, or in the summary at the end of the interval.
    func record(errno code: Int32) {
        let now = ContinuousClock.now
        let (line, summaryDelay) = state.withLock { state -> (String?, Duration?) in
            state.unreported += 1
            state.lastErrno = code
            if let last = state.lastReport, now - last < interval {
                guard !state.summaryScheduled else { return (nil, nil) }
                state.summaryScheduled = true
                return (nil, last + interval - now)
            }
            state.lastReport = now
            defer { state.unreported = 0 }
            return (Self.line(count: state.unreported, errno: code, interval: nil), nil)
        }
        if let line { queue.async { [write] in write(line) } }
        if let summaryDelay {
            queue.asyncAfter(deadline: .now() + summaryDelay.seconds) { [self] in summarize() }
        }
    }

    /// The summary at the end of an interval: the failures since the last line, if any.
    private func summarize() {
        let line = state.withLock { state -> String? in
            state.summaryScheduled = false
            guard state.unreported > 0 else { return nil }
            state.lastReport = ContinuousClock.now
            defer { state.unreported = 0 }
            return Self.line(count: state.unreported, errno: state.lastErrno, interval: interval)
        }
        if let line { write(line) }
    }

    static func line(count: Int, errno code: Int32, interval: Duration?) -> String {
        let resource = code == EMFILE || code == ENFILE ? "out of file descriptors" : "out of memory for sockets"
        let reason = String(cString: strerror(code))
        let times = count == 1 ? "1 time" : "\(count) times"
        let when = interval.map { " in the last \(Int($0.seconds))s" } ?? ""
        return "moya-gateway: accepting connections failed \(times)\(when): \(resource) (\(reason)); new connections "
            + "wait in the listen backlog and accepting is retried every 100 ms. Raise the descriptor limit (ulimit -n, "
            + "LimitNOFILE) above server.limits.max_connections plus the upstream connections."
    }

    @Sendable static func standardError(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}
