import Foundation
import HTTPWire
import Logging
import NetCore
import Yams

/// Loads and validates a gateway configuration file. `check`, `serve` and reload all use this one loader.
///
/// Loading is a function of the file path, the file text and the environment; the only other input is the file
/// system, read through ``readFile`` for `body_file`, checked through ``fileExists`` for TLS files and `ca_file`, and
/// the server certificate's pair and dates checked through ``checkServerCertificate`` (all injectable for tests). Every
/// problem is collected; none stops the others from being found.
package struct ConfigLoader: Sendable {
    /// Reads a whole file; `nil` when it cannot be read.
    package var readFile: @Sendable (String) -> [UInt8]?
    /// Whether a readable regular file exists at the path.
    package var fileExists: @Sendable (String) -> Bool
    /// Why the server certificate and private key at these paths cannot be served (they do not match, the certificate
    /// has expired or is not valid yet, a file is not PEM), or nil when they can.
    package var checkServerCertificate: @Sendable (_ certificate: String, _ privateKey: String) -> String?
    /// Why log lines could not be appended to the file at this path (`logging.output`), or nil when they can.
    package var logOutputProblem: @Sendable (String) -> String?
    /// Why the CA bundle at this path (a `ca_file`) cannot be loaded, or nil when it can.
    package var checkCABundle: @Sendable (String) -> String?

    package init(
        readFile: @escaping @Sendable (String) -> [UInt8]? = ConfigLoader.readFileFromDisk,
        fileExists: @escaping @Sendable (String) -> Bool = ConfigLoader.fileExistsOnDisk,
        checkServerCertificate: @escaping @Sendable (String, String) -> String? = ConfigLoader
            .serverCertificateProblemOnDisk,
        logOutputProblem: @escaping @Sendable (String) -> String? = ConfigLoader.logOutputProblemOnDisk,
        checkCABundle: @escaping @Sendable (String) -> String? = ConfigLoader.caBundleProblemOnDisk
    ) {
        self.readFile = readFile
        self.fileExists = fileExists
        self.checkServerCertificate = checkServerCertificate
        self.logOutputProblem = logOutputProblem
        self.checkCABundle = checkCABundle
    }

    /// An existing file must be writable and not a directory; a new one needs a writable directory to be made in.
    /// Nothing is created or changed.
    package static let logOutputProblemOnDisk: @Sendable (String) -> String? = { path in
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { return "is a directory" }
            return FileManager.default.isWritableFile(atPath: path) ? nil : "file not writable"
        }
        let directory = (path as NSString).deletingLastPathComponent
        let parent = directory.isEmpty ? "." : directory
        guard FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            return "no such directory"
        }
        return FileManager.default.isWritableFile(atPath: parent) ? nil : "directory not writable"
    }

    /// Builds the TLS context `serve` would build from the files; its error, if any.
    package static let serverCertificateProblemOnDisk: @Sendable (String, String) -> String? = { certificate, key in
        do {
            _ = try TLSContext(
                server: TLSServerConfiguration(
                    defaultCertificate: TLSCertificateFiles(certificateChainPath: certificate, privateKeyPath: key)))
            return nil
        } catch let error as TLSError {
            return error.reason
        } catch {
            return "\(error)"
        }
    }

    package static let readFileFromDisk: @Sendable (String) -> [UInt8]? = { path in
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return [UInt8](data)
    }

    package static let fileExistsOnDisk: @Sendable (String) -> Bool = { path in
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
            && FileManager.default.isReadableFile(atPath: path)
    }

    /// The file used when neither `--config` nor `$MOYA_GATEWAY_CONFIG` is given.
    package static let defaultPath = "Configuration/gateway.yaml"

    /// `explicit` (from `--config`), else `$MOYA_GATEWAY_CONFIG`, else ``defaultPath``.
    package static func resolvePath(explicit: String?, environment: [String: String]) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["MOYA_GATEWAY_CONFIG"], !fromEnvironment.isEmpty { return fromEnvironment }
        return defaultPath
    }

    /// Reads the file at `path` and loads it.
    package func load(path: String, environment: [String: String]) -> Result<GatewayConfig, ConfigErrors> {
        guard let bytes = readFile(path) else {
            return .failure(
                ConfigErrors([
                    ConfigProblem(
                        file: path, line: 1, keyPath: "(file)",
                        reason: "cannot read the configuration file")
                ]))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(
                ConfigErrors([
                    ConfigProblem(
                        file: path, line: 1, keyPath: "(file)",
                        reason: "the file is not valid UTF-8")
                ]))
        }
        return load(path: path, text: text, environment: environment)
    }

    /// Loads configuration `text` that was read from `path` (used for messages and to resolve relative paths).
    package func load(path: String, text: String, environment: [String: String]) -> Result<GatewayConfig, ConfigErrors>
    {
        let root: Node?
        do {
            // `.basic`: no implicit tag resolution. The reader types every scalar itself from its text, and Yams'
            // default resolver compiles its tag patterns as ICU regular expressions on first use: about 9 million
            // instructions and ICU's code and Unicode sets paged in for the life of the process.
            root = try Yams.compose(yaml: text, .basic)
        } catch {
            return .failure(ConfigErrors([ConfigLoader.syntaxProblem(error, file: path)]))
        }
        let reader = YAMLReader(file: path, environment: environment, readFile: readFile)
        var builder = Builder(reader: reader, loader: self, path: path)
        let config = builder.build(root: root ?? .mapping(Node.Mapping([])))
        if reader.problems.isEmpty, let config { return .success(config) }
        let problems = reader.problems.enumerated().sorted {
            ($0.element.line, $0.offset) < ($1.element.line, $1.offset)
        }.map(\.element)
        return .failure(
            ConfigErrors(
                problems.isEmpty
                    ? [ConfigProblem(file: path, line: 1, keyPath: "(file)", reason: "invalid configuration")]
                    : problems))
    }

    static func syntaxProblem(_ error: Error, file: String) -> ConfigProblem {
        func make(_ mark: Mark, _ problem: String, _ context: YamlError.Context?) -> ConfigProblem {
            var reason = "YAML syntax error at column \(max(1, mark.column)): \(problem)"
            if let context { reason += " (\(context.text) at line \(context.mark.line))" }
            return ConfigProblem(
                file: file, line: max(1, mark.line), column: max(1, mark.column), keyPath: "(yaml)",
                reason: reason)
        }
        if let yamlError = error as? YamlError {
            switch yamlError {
            case .scanner(let context, let problem, let mark, _): return make(mark, problem, context)
            case .parser(let context, let problem, let mark, _): return make(mark, problem, context)
            case .composer(let context, let problem, let mark, _): return make(mark, problem, context)
            case .duplicatedKeysInMapping(let duplicates, let context):
                return make(context.mark, "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", "))", nil)
            case .reader(let problem, _, _, _):
                return ConfigProblem(
                    file: file, line: 1, column: 1, keyPath: "(yaml)",
                    reason: "YAML syntax error: \(problem)")
            default: break
            }
        }
        return ConfigProblem(file: file, line: 1, column: 1, keyPath: "(yaml)", reason: "YAML syntax error")
    }
}

/// Builds the model from the YAML tree. Every sub-builder reports through `reader` and returns nil on failure.
struct Builder {
    let reader: YAMLReader
    let loader: ConfigLoader
    let path: String
    /// `clients.api_keys.header`, once read: stub matches and templates may not use it (no upstream gets it).
    var apiKeyHeader: String?

    init(reader: YAMLReader, loader: ConfigLoader, path: String) {
        self.reader = reader
        self.loader = loader
        self.path = path
    }

    func resolve(_ file: String) -> String { reader.resolve(file) }

    mutating func build(root: Node) -> GatewayConfig? {
        guard
            let top = reader.mapping(
                root, "",
                allowed: [
                    "server", "admin", "logging", "clients", "upstreams",
                    "routes", "reload"
                ])
        else { return nil }
        var config = GatewayConfig(sourcePath: path)
        if let entry = top["server"], let server = server(entry) { config.server = server }
        if top["server"] == nil {
            BufferingConfigParser.checkDefaultTempDirectory(
                line: top.line, reader: reader,
                tempDirectoryProblem: BufferingConfig.tempDirectoryProblemOnDisk)
        }
        if let entry = top["admin"], let admin = admin(entry) { config.admin = admin }
        if let entry = top["logging"], let logging = logging(entry) { config.logging = logging }
        if let entry = top["clients"] { config.clients = clients(entry) }
        if let entry = top["reload"], let reload = loader.reload(entry, reader: reader) { config.reload = reload }
        apiKeyHeader = config.clients?.apiKeys?.header
        var declared: [String] = []
        if let entry = reader.requireKey(top, "upstreams") {
            config.upstreams = upstreams(entry)
            if case .mapping(let mapping) = entry.value { declared = mapping.keys.compactMap { $0.scalar?.string } }
        }
        if let entry = reader.requireKey(top, "routes") {
            config.routes = routes(
                entry, declaredUpstreams: declared,
                stubUpstreams: Set(config.upstreams.filter(\.isStub).map(\.name)), clients: config.clients)
            reportCoalescedStubFaults(config, routes: entry)
        }
        return config
    }
}
