import ArgumentParser
import Gateway

/// `moya-gateway routes`: print the route table in the order the router tries it.
struct RoutesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "routes",
        abstract: "Print the route table as the router sees it."
    )

    @OptionGroup var options: ConfigOptions

    func run() throws {
        guard let config = options.load() else { throw ExitCode(1) }
        print(RouteTableFormatter.format(RouteTable(config: config)), terminator: "")
    }
}
