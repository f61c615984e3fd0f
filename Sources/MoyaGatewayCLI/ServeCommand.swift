import ArgumentParser
import Foundation
import Gateway
import NetCore
import ServiceLifecycle

/// `moya-gateway serve`: load the configuration exactly like `check`, bind the listeners and serve until SIGTERM or
/// SIGINT (drain, then exit 0); SIGHUP reloads the file, keeping the old configuration when the new one is invalid;
/// SIGUSR1 (and SIGHUP) reopen the log file after a rotation.
/// Signals are handled by a swift-service-lifecycle `ServiceGroup` running one ``GatewayService``.
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
        var group = ServiceGroupConfiguration(
            services: [.init(service: GatewayService(runtime: runtime, configPath: options.path))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: runtime.logger)
        // The drain has its own deadline; this only bounds a drain that hangs.
        group.maximumGracefulShutdownDuration = config.server.limits.drainTimeout + .seconds(10)
        try await ServiceGroup(configuration: group).run()
    }
}
