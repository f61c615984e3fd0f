import Foundation
import HTTPClientCore
import TestSupport
import Testing

/// Where `serve` finds its configuration, with the real binary: `Configuration/gateway.yaml` below the working
/// directory when neither `--config` nor `$MOYA_GATEWAY_CONFIG` is given (the shipped file, served as it is but for
/// its ports), and `$MOYA_GATEWAY_CONFIG` over that default.
@Suite(.serialized) struct ServeConfigLocationTests {
    static let shipped = packageRoot.appendingPathComponent("Configuration")

    /// The shipped `Configuration/` with its listeners moved to the test's ports.
    static func shippedFiles() throws -> (config: String, files: [String: String]) {
        let config = try String(contentsOf: shipped.appendingPathComponent("gateway.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:PORT")
            .replacingOccurrences(of: "127.0.0.1:9090", with: "127.0.0.1:ADMIN")
        var files: [String: String] = [:]
        for name in ["catalog.json", "user.json"] {
            files["Configuration/stubs/\(name)"] = try String(
                contentsOf: shipped.appendingPathComponent("stubs/\(name)"), encoding: .utf8)
        }
        return (config, files)
    }

    static func text(_ response: HTTPClientResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    /// The README's `serve` with no flag: the shipped routes answer from their stubs, no network needed.
    @Test(.enabled(if: CheckCommandTests.binary() != nil, "build moya-gateway with `swift build` first"))
    func serveWithoutAFlagRunsTheShippedConfiguration() async throws {
        let (config, files) = try Self.shippedFiles()
        let gateway = try await GatewayProcess(config: config, files: files, location: .defaultPath)
        let client = HTTPClient()
        let catalog = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/catalog"))
        #expect(catalog.status == 200)
        #expect(Self.text(catalog) == files["Configuration/stubs/catalog.json"], "the body file, byte for byte")
        let user = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/users/7"))
        #expect(user.status == 200 && Self.text(user) == #"{"id": "7", "name": "Ada"}"#)
        // The users stub's responses: a templated body file, a sequence on a JSON body, the default answer.
        let other = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/users/42"))
        #expect(Self.text(other) == #"{"id": "42", "name": "Ada"}"#)
        func create() async throws -> Int {
            try await client.execute(
                HTTPClientRequest(
                    method: .post, url: "\(gateway.url)/api/users",
                    body: .bytes(Array(#"{"name": "Ada"}"#.utf8)))
            ).status
        }
        #expect(try await create() == 201)
        #expect(try await create() == 409)
        let list = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/users"))
        #expect(Self.text(list) == #"{"users": [{"id": "7", "name": "Ada"}]}"#)
        let bulk = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/bulk/x"))
        #expect(bulk.status == 200 && bulk.body.count == 64 << 10)
        // The normal latency (mean 200 ms, clamped to 50–500 ms) of the `slow` stub.
        let started = ContinuousClock.now
        let slow = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/api/slow"))
        let waited = ContinuousClock.now - started
        #expect(slow.status == 200 && Self.text(slow) == "slow but steady\n")
        #expect(waited >= .milliseconds(50) && waited < .seconds(1), "\(waited)")
        let missing = try await client.execute(HTTPClientRequest(url: "\(gateway.url)/nowhere"))
        #expect(missing.status == 404)
        #expect(gateway.stop() == 0)
        let routes = Set(gateway.accessLog.compactMap { $0["route"] as? String })
        #expect(routes == ["catalog", "user-by-id", "users", "bulk", "slow"], "\(routes)")
        #expect(gateway.accessLog.allSatisfy { ($0["route"] as? String) == nil || $0["stubbed"] as? Bool == true })
    }

    /// `$MOYA_GATEWAY_CONFIG` is read instead of the default file, which is there too (on the same ports) and would
    /// answer `/api/catalog` with the catalog otherwise.
    @Test(.enabled(if: CheckCommandTests.binary() != nil, "build moya-gateway with `swift build` first"))
    func theEnvironmentVariableNamesTheFileServeReads() async throws {
        let (shippedConfig, files) = try Self.shippedFiles()
        let chosen = """
            \(GatewayProcess.listeners)
            upstreams:
              chosen: { stub: { status: 200, body: "from MOYA_GATEWAY_CONFIG" } }
            routes:
              - { name: chosen, match: { path_prefix: /api }, upstream: chosen }
            """
        var all = files
        all["Configuration/gateway.yaml"] = shippedConfig
        let gateway = try await GatewayProcess(config: chosen, files: all, location: .environment)
        let response = try await HTTPClient().execute(HTTPClientRequest(url: "\(gateway.url)/api/catalog"))
        #expect(response.status == 200)
        #expect(Self.text(response) == "from MOYA_GATEWAY_CONFIG")
        gateway.stop()
    }
}
