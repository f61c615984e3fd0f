import Foundation

@testable import Gateway

/// A loader over an in-memory file system.
func memoryLoader(_ files: [String: String] = [:]) -> ConfigLoader {
    ConfigLoader(
        readFile: { path in files[path].map { Array($0.utf8) } },
        fileExists: { path in files[path] != nil }, checkServerCertificate: { _, _ in nil },
        logOutputProblem: { path in path.hasPrefix("/unwritable/") ? "no such directory" : nil })
}

func load(
    _ text: String, env: [String: String] = [:], files: [String: String] = [:],
    path: String = "conf/gw.yaml"
) -> Result<GatewayConfig, ConfigErrors> {
    memoryLoader(files).load(path: path, text: text, environment: env)
}

/// The problems as printed by `check`, or [] when the file loaded.
func problems(_ text: String, env: [String: String] = [:], files: [String: String] = [:]) -> [String] {
    switch load(text, env: env, files: files) {
    case .success: return []
    case .failure(let errors): return errors.problems.map(\.description)
    }
}

func config(_ text: String, env: [String: String] = [:], files: [String: String] = [:]) throws -> GatewayConfig {
    try load(text, env: env, files: files).get()
}

/// The package root, from this file's path.
let packageRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
