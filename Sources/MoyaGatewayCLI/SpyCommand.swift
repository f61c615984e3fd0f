import ArgumentParser
import Foundation
import Gateway
import NetCore
import ServiceLifecycle

/// `moya-gateway spy`: serve the configuration with a recording (`record --out DIR`) in front of its upstreams, as
/// Hoverfly's spy mode does: a request one of the recorded responses matches is answered from the recording (with
/// its latency), any other is proxied to the real upstream. A reload (SIGHUP) reads both files again.
struct SpyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spy",
        abstract: "Serve, answering from a recording where it has a match and proxying the rest."
    )

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "A directory written by `moya-gateway record` (its gateway.yaml).")
    var recording: String

    func run() async throws {
        let files = ReferencedFiles()
        guard let config = options.load(noting: files) else { throw ExitCode(1) }
        let recordingPath = recording.hasSuffix(".yaml") ? recording : "\(recording)/gateway.yaml"
        let environment = options.environment
        guard let recorded = Self.recorded(recordingPath, environment: environment) else { throw ExitCode(1) }
        let spied = Self.spying(config, on: recorded)
        let names = spied.upstreams.filter { $0.spy != nil }.map(\.name)
        guard !names.isEmpty else {
            StandardError.print("\(recordingPath): records none of the upstreams with a base_url in \(options.path)")
            throw ExitCode(1)
        }
        let runtime = try await GatewayService.start(spied, path: options.path)
        runtime.logger.notice(
            "spying", metadata: ["recording": "\(recordingPath)", "upstreams": "\(names.joined(separator: ","))"])
        var service = GatewayService(
            runtime: runtime, configPath: options.path, watchFlag: false, config: spied,
            files: files.all)
        service.adjust = { config in
            Self.recorded(recordingPath, environment: environment).map { Self.spying(config, on: $0) } ?? config
        }
        try await service.runUntilDrained(drainTimeout: config.server.limits.drainTimeout, logger: runtime.logger)
    }

    /// The recording's configuration; its problems printed as `check` prints them.
    static func recorded(_ path: String, environment: [String: String]) -> GatewayConfig? {
        switch ConfigLoader().load(path: path, environment: environment) {
        case .success(let config):
            return config
        case .failure(let errors):
            for problem in errors.problems { StandardError.print(problem.description) }
            return nil
        }
    }

    /// `config` with each upstream that has a `base_url` and a stub of its name in `recorded` spying on that stub.
    static func spying(_ config: GatewayConfig, on recorded: GatewayConfig) -> GatewayConfig {
        var spied = config
        for index in spied.upstreams.indices
        where spied.upstreams[index].baseURL != nil && !spied.upstreams[index].isStub {
            if var stub = recorded.upstream(named: spied.upstreams[index].name)?.stub {
                stub.hasDefault = false
                spied.upstreams[index].spy = stub
            }
        }
        return spied
    }
}
