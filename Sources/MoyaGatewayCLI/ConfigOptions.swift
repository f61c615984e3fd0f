import ArgumentParser
import Foundation
import Gateway

/// `--config PATH`, else `$MOYA_GATEWAY_CONFIG`, else `Configuration/gateway.yaml`.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "Configuration file (default: $MOYA_GATEWAY_CONFIG, else Configuration/gateway.yaml).")
    var config: String?

    var environment: [String: String] { ProcessInfo.processInfo.environment }

    var path: String { ConfigLoader.resolvePath(explicit: config, environment: environment) }

    /// Loads the configuration exactly as `check`, `serve` and reload do; on failure prints one problem per line to
    /// stderr and returns nil.
    func load(noting files: ReferencedFiles? = nil) -> GatewayConfig? {
        let loader = files.map { ConfigLoader().recording(into: $0) } ?? ConfigLoader()
        switch loader.load(path: path, environment: environment) {
        case .success(let config):
            return config
        case .failure(let errors):
            for problem in errors.problems { StandardError.print(problem.description) }
            return nil
        }
    }
}

enum StandardError {
    /// Writes one line; a closed or broken stderr loses it (the non-throwing `write(_:)` would trap).
    static func print(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}
