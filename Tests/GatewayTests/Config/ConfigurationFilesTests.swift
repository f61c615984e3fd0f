import Foundation
import Testing

@testable import Gateway

/// Every file under Configuration/ loads (examples with their environment variables set).
@Suite struct ConfigurationFilesTests {
    static let exampleEnvironment: [String: String] = [
        "USERS_TOKEN": "users-token", "BILLING_KEY": "billing-key", "WEB_KEY": "web-key",
        "BILLING_PASSWORD": "billing-password", "MOYA_TLS_DIR": "/tls", "OAUTH_CLIENT_SECRET": "oauth-client-secret"
    ]

    static func yamlFiles() -> [String] {
        let root = packageRoot.appendingPathComponent("Configuration").path
        let enumerator = FileManager.default.enumerator(atPath: root)
        var files: [String] = []
        while let item = enumerator?.nextObject() as? String {
            if item.hasSuffix(".yaml") || item.hasSuffix(".yml") { files.append(root + "/" + item) }
        }
        return files.sorted()
    }

    @Test func thereAreFilesToCheck() {
        let names = Self.yamlFiles().map { ($0 as NSString).lastPathComponent }
        #expect(
            names.contains("gateway.yaml") && names.contains("real-upstream.yaml") && names.contains("tls.yaml")
                && names.contains("api-keys.yaml") && names.contains("oauth2-upstream.yaml"))
    }

    @Test(arguments: yamlFiles()) func fileLoads(path: String) {
        let tlsFiles: Set<String> = ["/tls/server.pem", "/tls/server.key", "/tls/ca.pem"]
        let loader = ConfigLoader(
            readFile: ConfigLoader.readFileFromDisk,
            fileExists: { tlsFiles.contains($0) || ConfigLoader.fileExistsOnDisk($0) },
            checkServerCertificate: { _, _ in nil })
        switch loader.load(path: path, environment: Self.exampleEnvironment) {
        case .success(let config):
            #expect(!config.routes.isEmpty)
            #expect(RouteTable(config: config).routes.count == config.routes.count)
        case .failure(let errors):
            Issue.record("\(errors)")
        }
    }

    @Test func defaultConfigurationNeedsNoEnvironmentAndOnlyStubs() throws {
        let path = packageRoot.appendingPathComponent("Configuration/gateway.yaml").path
        let config = try ConfigLoader().load(path: path, environment: [:]).get()
        #expect(config.upstreams.allSatisfy { $0.isStub })
        #expect(config.server.listen.map(\.description) == ["127.0.0.1:8080"])
        #expect(config.admin.listen.description == "127.0.0.1:9090")
        #expect(config.routes.contains { $0.coalesce })
        #expect(config.routes.contains { $0.match.pathParams != nil })
        #expect(config.upstreams.contains { $0.stub?.latency != nil })
        #expect(config.upstream(named: "catalog")?.stub?.bodyFile?.hasSuffix("stubs/catalog.json") == true)
    }
}
