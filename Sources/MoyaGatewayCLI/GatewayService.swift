import Foundation
import Gateway
import ServiceLifecycle
import UnixSignals

/// The running gateway as a swift-service-lifecycle `Service`: it serves until the service group asks for a graceful
/// shutdown (SIGTERM or SIGINT), then drains. SIGHUP reloads the configuration file meanwhile (an invalid file is
/// logged and the running configuration kept); SIGUSR1 reopens the log file after a rotation, and so does SIGHUP.
struct GatewayService: Service {
    let runtime: GatewayRuntime
    let configPath: String
    /// Applied to every configuration a reload loads (`spy` adds the recording to it).
    var adjust: (@Sendable (GatewayConfig) -> GatewayConfig)? = nil

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup, .sigusr1)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await signal in signals {
                    await runtime.reopenLogFile()
                    if signal == .sighup { reload() }
                }
            }
            // Returns when graceful shutdown is triggered, or throws when the group is cancelled: drain either way.
            try? await gracefulShutdown()
            group.cancelAll()
        }
        await runtime.drain()
    }

    private func reload() {
        switch ConfigLoader().load(path: configPath, environment: ProcessInfo.processInfo.environment) {
        case .success(let config):
            runtime.reload(with: adjust?(config) ?? config)
        case .failure(let errors):
            runtime.reloadRejected(problems: errors.problems.map(\.description))
        }
    }
}
