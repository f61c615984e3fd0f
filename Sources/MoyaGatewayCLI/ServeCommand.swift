import ArgumentParser
import Dispatch
import Foundation
import Gateway
import NetCore

/// `moya-gateway serve`: load the configuration exactly like `check`, bind the listeners and serve until SIGTERM or
/// SIGINT (drain, then exit 0); SIGHUP reloads the file, keeping the old configuration when the new one is invalid.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway."
    )

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        guard let config = options.load() else { throw ExitCode(1) }
        Socket.ignoreSIGPIPE()
        let runtime: GatewayRuntime
        do {
            runtime = try GatewayRuntime(config: config)
            try await runtime.start()
        } catch {
            StandardError.print("\(options.path): cannot start: \(error)")
            throw ExitCode(1)
        }
        await waitForSignals(runtime: runtime)
        await runtime.drain()
    }

    /// Handles SIGHUP (reload) until SIGTERM or SIGINT arrives.
    private func waitForSignals(runtime: GatewayRuntime) async {
        for signal in [SIGTERM, SIGINT, SIGHUP] { Foundation.signal(signal, SIG_IGN) }
        let queue = DispatchQueue(label: "moya-gateway.signals")
        let options = self.options
        let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        reload.setEventHandler {
            switch ConfigLoader().load(path: options.path, environment: ProcessInfo.processInfo.environment) {
            case .success(let config):
                runtime.reload(with: config)
            case .failure(let errors):
                runtime.logger.error("reload rejected; keeping the running configuration",
                                     metadata: ["problems": .array(errors.problems.map { .string($0.description) })])
            }
        }
        reload.resume()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let sources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: queue) }
            let once = OnceFlag()
            for source in sources {
                source.setEventHandler {
                    if once.claim() {
                        for source in sources { source.cancel() }
                        continuation.resume()
                    }
                }
                source.resume()
            }
        }
        reload.cancel()
    }
}

/// True for the first caller only.
final class OnceFlag: @unchecked Sendable {
    private var claimed = false
    private let lock = NSLock()

    func claim() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if claimed { return false }
        claimed = true
        return true
    }
}
