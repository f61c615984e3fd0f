import ArgumentParser
import Foundation
import Gateway
import NetCore
import ServiceLifecycle

/// `moya-gateway serve`: load the configuration exactly like `check`, bind the listeners and serve until SIGTERM or
/// SIGINT (drain, then exit 0); SIGHUP reloads the file, keeping the old configuration when the new one is invalid;
/// SIGUSR1 (and SIGHUP) reopen the log file after a rotation. `--watch` (or `reload.watch: true`) reloads the same way
/// when the file, or a file it names, changes on disk.
/// Signals are handled by a swift-service-lifecycle `ServiceGroup` running one ``GatewayService``.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway."
    )

    @OptionGroup var options: ConfigOptions

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Reload when the configuration file, a file it names (secrets, stub bodies, certificates) or its Kubernetes "
                + "volume changes (as reload.watch: true)."))
    var watch = false

    func run() async throws {
        let files = ReferencedFiles()
        guard let config = options.load(noting: files) else { throw ExitCode(1) }
        let runtime = try await GatewayService.start(config, path: options.path)
        try await GatewayService(
            runtime: runtime, configPath: options.path, watchFlag: watch, config: config,
            files: files.all
        )
        .runUntilDrained(drainTimeout: config.server.limits.drainTimeout, logger: runtime.logger)
    }
}
