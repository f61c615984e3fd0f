import ArgumentParser
import Gateway
import Logging
import NetCore
import ServiceLifecycle

extension GatewayService {
    /// Builds the runtime for `config` and binds its listeners, as `serve`, `record` and `spy` start; a failure is
    /// printed as `PATH: cannot start: ERROR` and ends the command with status 1. The gateway reports ready once the
    /// service runs (``run()``), with its signal handlers in place.
    static func start(_ config: GatewayConfig, recorder: ExchangeRecorder? = nil, path: String) async throws
        -> GatewayRuntime
    {
        Socket.ignoreSIGPIPE()
        do {
            let runtime = try GatewayRuntime(config: config, recorder: recorder)
            try await runtime.start()
            return runtime
        } catch {
            StandardError.print("\(path): cannot start: \(error)")
            throw ExitCode(1)
        }
    }

    /// Runs the service in a service group until SIGTERM or SIGINT has drained it. The drain has its own deadline
    /// (`drainTimeout`); the group's only bounds a drain that hangs.
    func runUntilDrained(drainTimeout: Duration, logger: Logger) async throws {
        var group = ServiceGroupConfiguration(
            services: [.init(service: self)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = drainTimeout + .seconds(10)
        try await ServiceGroup(configuration: group).run()
    }
}
