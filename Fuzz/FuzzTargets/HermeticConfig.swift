import Gateway

/// A `ConfigLoader` that touches nothing outside the process: the file system it sees is a few files in memory under
/// `/fuzz` (what `${file:PATH}`, `body_file`, the TLS files and `ca_file` find), the server certificate check and the
/// log output check answer from the path alone, and the environment is a fixed dictionary. So a configuration can
/// name `/dev/zero`, a FIFO or a network mount and the harness still neither blocks nor reads anything.
enum HermeticConfig {
    /// Where the configuration "is": relative paths resolve against `/fuzz`.
    static let path = "/fuzz/gateway.yaml"

    /// Values that must never appear in a message: one from the environment, one from a secret file.
    static let environmentSecret = "ENV-SECRET-q7Zx3"
    static let fileSecret = "FILE-SECRET-k2Wv9"

    static let environment: [String: String] = [
        "API_TOKEN": environmentSecret,
        "UPSTREAM_URL": "http://127.0.0.1:9001/v1",
        "PORT": "8080",
        "LISTEN": "127.0.0.1:8080",
        "EMPTY": ""
    ]

    static let files: [String: [UInt8]] = [
        "/fuzz/secrets/token": Array("\(fileSecret)\n".utf8),
        "/fuzz/secrets/empty": [],
        "/fuzz/secrets/binary": [0xFF, 0xFE, 0x00, 0x41],
        "/fuzz/secrets/large": Array(repeating: UInt8(ascii: "a"), count: 64 * 1024 + 1),
        "/fuzz/stubs/user.json": Array(#"{"id": "7", "name": "Ada"}"#.utf8),
        "/fuzz/tls/server.pem": Array("-----BEGIN CERTIFICATE-----\n".utf8),
        "/fuzz/tls/server.key": Array("-----BEGIN PRIVATE KEY-----\n".utf8),
        "/fuzz/tls/other.key": Array("-----BEGIN PRIVATE KEY-----\n".utf8),
        "/fuzz/tls/ca.pem": Array("-----BEGIN CERTIFICATE-----\n".utf8)
    ]

    static let loader = ConfigLoader(
        readFile: { files[$0] },
        fileExists: { files[$0] != nil },
        checkServerCertificate: { certificate, key in
            certificate == "/fuzz/tls/server.pem" && key == "/fuzz/tls/server.key"
                ? nil : "the certificate does not match the private key"
        },
        logOutputProblem: { path in path.hasPrefix("/fuzz/logs/") ? nil : "no such directory" })

    static func load(_ text: String) -> Result<GatewayConfig, ConfigErrors> {
        loader.load(path: path, text: text, environment: environment)
    }
}
