import Foundation
import Gateway
import ServiceLifecycle
import UnixSignals

/// The running gateway as a swift-service-lifecycle `Service`: it serves until the service group asks for a graceful
/// shutdown (SIGTERM or SIGINT), then drains. SIGHUP reloads the configuration file meanwhile (an invalid file is
/// logged and the running configuration kept); SIGUSR1 reopens the log file after a rotation, and so does SIGHUP.
///
/// With `--watch` or `reload.watch: true`, a change to the configuration file or a file it names (see
/// ``ConfigFileWatcher``) reloads it too, as SIGHUP does. Reloads run one at a time, in the order they were asked for.
struct GatewayService: Service, CustomStringConvertible {
    let runtime: GatewayRuntime
    let configPath: String
    /// `serve --watch`: watch whatever the file says.
    let watchFlag: Bool
    /// The configuration `serve` started with, and the files its load read.
    let config: GatewayConfig
    let files: Set<String>

    /// What swift-service-lifecycle logs of the service: never the configuration, which holds stub bodies and headers
    /// (its secrets are redacted, but not everything sensitive is a secret).
    var description: String { "GatewayService(config: \(configPath), watch: \(watchFlag))" }
    /// Applied to every configuration a reload loads (`spy` adds the recording to it).
    var adjust: (@Sendable (GatewayConfig) -> GatewayConfig)? = nil

    func run() async throws {
        // The service group has trapped SIGTERM and SIGINT before this runs; with SIGHUP and SIGUSR1 trapped too, the
        // gateway may say it is ready.
        let signals = await UnixSignalsSequence(trapping: .sighup, .sigusr1)
        runtime.announceReady()
        let (triggers, trigger) = AsyncStream<ConfigReloader.Trigger>.makeStream()
        let reloader = ConfigReloader(
            runtime: runtime, configPath: configPath, config: config, files: files,
            watch: watchFlag, adjust: adjust
        ) { trigger.yield(.filesChanged) }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await signal in signals {
                    await runtime.reopenLogFile()
                    if signal == .sighup { trigger.yield(.signal) }
                }
            }
            group.addTask {
                for await reason in triggers { reloader.reload(reason) }
            }
            // Returns when graceful shutdown is triggered, or throws when the group is cancelled: drain either way.
            try? await gracefulShutdown()
            trigger.finish()
            reloader.stop()
            group.cancelAll()
        }
        await runtime.drain()
    }
}
