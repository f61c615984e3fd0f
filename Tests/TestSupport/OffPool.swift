import Foundation

/// Runs blocking test work (raw sockets, external processes) on its own thread, so the two-thread cooperative pool
/// is never blocked.
///
/// Two blocking calls awaited from `Task.detached` would hold both of the pool's threads on a two-CPU machine, and an
/// in-process upstream's tasks would then never run.
package func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
