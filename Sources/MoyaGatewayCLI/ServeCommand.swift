import ArgumentParser
import Gateway

/// `moya-gateway serve`: load the configuration like `check`, then run the gateway.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway."
    )

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        guard let config = options.load() else { throw ExitCode(1) }
        _ = RouteTable(config: config)
        // The server is wired here by the integration work; until then, refuse to pretend to serve.
        StandardError.print("serve: not wired yet")
        throw ExitCode(2)
    }
}
