#if MOYA_TSAN_LOCKS
#if canImport(Glibc)
import Glibc
#endif

/// A value behind a lock, for ThreadSanitizer builds (`scripts/tsan.sh` builds with `-D MOYA_TSAN_LOCKS`): a pthread
/// mutex, which TSan intercepts and so sees as the happens-before edge it is.
///
/// `Synchronization.Mutex` takes its contended path through futex calls in the uninstrumented Swift runtime: TSan
/// does not see that lock, and reports every access made under it as a race. This class has the same `init` and
/// `withLock` as the `Mutex` the other builds use (see the typealias below), so the code is the same in both.
package final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    /// A lock around `value`.
    package init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
#else
import Synchronization

/// A value behind a lock: `Synchronization.Mutex`, stored inline. A ThreadSanitizer build (`-D MOYA_TSAN_LOCKS`)
/// uses a pthread mutex instead, one TSan can see.
package typealias Locked<Value: ~Copyable> = Mutex<Value>
#endif
