import Foundation

/// Starts the processes tests run (gateways, servers, upstreams, tools) so that they die with the test process: a
/// `swift test` that is killed (a CI timeout, Ctrl-C) leaves no gateway or upstream behind holding its ports and CPU.
///
/// Each child runs under `setpriv --pdeathsig KILL`, which asks the kernel for SIGKILL when the child's parent goes,
/// then replaces itself with the program (same pid, so signals and `waitpid` reach the program itself). The kernel's
/// "parent" is the thread that forked, not the process: children are started from one thread that lives as long as
/// the test process, never from a pool thread that may exit while its child is still needed. Without `setpriv` the
/// child is started as it is.
package enum ChildProcess {
    private static let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs `process` (its executable and arguments as set) as described above; throws what `Process.run()` throws.
    package static func launch(_ process: Process) throws {
        if let setpriv, let executable = process.executableURL {
            process.arguments = ["--pdeathsig", "KILL", "--", executable.path] + (process.arguments ?? [])
            process.executableURL = URL(fileURLWithPath: setpriv)
        }
        let box = UncheckedBox(process)
        try SpawnThread.shared.perform { try box.value.run() }
    }
}

/// A value handed to the spawning thread and back; the caller waits for it, so it is never used by two threads at once.
private final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// The one long-lived thread that forks every child (see ``ChildProcess``).
private final class SpawnThread: @unchecked Sendable {
    static let shared = SpawnThread()

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in serve() }
        thread.name = "test-spawner"
        thread.start()
    }

    /// Runs `body` on the spawning thread and waits for it.
    func perform(_ body: @escaping @Sendable () throws -> Void) throws {
        let outcome = UncheckedBox<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        condition.lock()
        jobs.append {
            outcome.value = Result { try body() }
            done.signal()
        }
        condition.signal()
        condition.unlock()
        done.wait()
        try outcome.value?.get()
    }

    private func serve() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs = []
            condition.unlock()
            for job in batch { job() }
        }
    }
}
