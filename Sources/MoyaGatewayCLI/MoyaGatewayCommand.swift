import ArgumentParser
import Gateway

@main
struct MoyaGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moya-gateway",
        abstract: "A configuration-driven HTTP gateway built on Moya.",
        version: GatewayVersion.current,
        subcommands: [ServeCommand.self, CheckCommand.self, RoutesCommand.self, RecordCommand.self, SpyCommand.self]
    )
}
