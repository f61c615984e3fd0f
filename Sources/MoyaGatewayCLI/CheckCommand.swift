import ArgumentParser
import Gateway

/// `moya-gateway check`: validate only. `ok: N routes, M upstreams` and exit 0, else problems and exit 1.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the configuration file and exit."
    )

    @OptionGroup var options: ConfigOptions

    func run() throws {
        guard let config = options.load() else { throw ExitCode(1) }
        print("ok: \(config.routes.count) routes, \(config.upstreams.count) upstreams")
    }
}
