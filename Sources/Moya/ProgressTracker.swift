import Foundation
import HTTPClientCore
import Locking

/// Turns transport progress into `ProgressResponse`s on the callback queue and remembers the last one for the
/// final call.
final class ProgressTracker: @unchecked Sendable {
    private let lock = NSLock()
    private var last: Progress?
    private let queue: DispatchQueue
    private let block: UncheckedSendable<Moya.ProgressBlock?>
    private let isUpload: Bool

    init(queue: DispatchQueue, block: Moya.ProgressBlock?, isUpload: Bool) {
        self.queue = queue
        self.block = UncheckedSendable(block)
        self.isUpload = isUpload
    }

    var clientProgress: HTTPClientProgress {
        guard block.value != nil else { return HTTPClientProgress() }
        let update: @Sendable (Int64, Int64?) -> Void = { [self] completed, total in
            self.update(completed: completed, total: total)
        }
        return isUpload ? HTTPClientProgress(upload: update) : HTTPClientProgress(download: update)
    }

    private func update(completed: Int64, total: Int64?) {
        let progress = Progress(totalUnitCount: total ?? 0)
        progress.completedUnitCount = completed
        lock.withLock { last = progress }
        let snapshot = UncheckedSendable(progress)
        queue.async { [block] in block.value?(ProgressResponse(progress: snapshot.value)) }
    }

    /// The final progress call, with the response (nil on failure). Runs on the caller's queue.
    func finish(response: Moya.Response?) {
        guard let block = block.value else { return }
        block(ProgressResponse(progress: lock.withLock { last }, response: response))
    }
}
