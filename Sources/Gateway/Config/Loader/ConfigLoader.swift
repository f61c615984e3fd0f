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

    package init(readFile: @escaping @Sendable (String) -> [UInt8]? = ConfigLoader.readFileFromDisk,
                fileExists: @escaping @Sendable (String) -> Bool = ConfigLoader.fileExistsOnDisk,
                checkServerCertificate: @escaping @Sendable (String, String) -> String? = ConfigLoader.serverCertificateProblemOnDisk,
                logOutputProblem: @escaping @Sendable (String) -> String? = ConfigLoader.logOutputProblemOnDisk,
                checkCABundle: @escaping @Sendable (String) -> String? = ConfigLoader.caBundleProblemOnDisk) {
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
            _ = try TLSContext(server: TLSServerConfiguration(
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
            return .failure(ConfigErrors([ConfigProblem(file: path, line: 1, keyPath: "(file)",
                                                        reason: "cannot read the configuration file")]))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(ConfigErrors([ConfigProblem(file: path, line: 1, keyPath: "(file)",
                                                        reason: "the file is not valid UTF-8")]))
        }
        return load(path: path, text: text, environment: environment)
    }

    /// Loads configuration `text` that was read from `path` (used for messages and to resolve relative paths).
    package func load(path: String, text: String, environment: [String: String]) -> Result<GatewayConfig, ConfigErrors> {
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
        return .failure(ConfigErrors(problems.isEmpty
            ? [ConfigProblem(file: path, line: 1, keyPath: "(file)", reason: "invalid configuration")] : problems))
    }

    static func syntaxProblem(_ error: Error, file: String) -> ConfigProblem {
        func make(_ mark: Mark, _ problem: String, _ context: YamlError.Context?) -> ConfigProblem {
            var reason = "YAML syntax error at column \(max(1, mark.column)): \(problem)"
            if let context { reason += " (\(context.text) at line \(context.mark.line))" }
            return ConfigProblem(file: file, line: max(1, mark.line), column: max(1, mark.column), keyPath: "(yaml)",
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
                return ConfigProblem(file: file, line: 1, column: 1, keyPath: "(yaml)",
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
        guard let top = reader.mapping(root, "", allowed: ["server", "admin", "logging", "clients", "upstreams",
                                                           "routes", "reload"]) else { return nil }
        var config = GatewayConfig(sourcePath: path)
        if let entry = top["server"], let server = server(entry) { config.server = server }
        if top["server"] == nil {
            BufferingConfigParser.checkDefaultTempDirectory(line: top.line, reader: reader,
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
            config.routes = routes(entry, declaredUpstreams: declared,
                                   stubUpstreams: Set(config.upstreams.filter(\.isStub).map(\.name)), clients: config.clients)
            reportCoalescedStubFaults(config, routes: entry)
        }
        return config
    }

    // MARK: server

    func listenList(_ entry: YAMLReader.Entry) -> [ListenAddress]? {
        addressList(entry, kind: "listen", forms: "IP:port, localhost:port or [IPv6]:port", parse: ListenAddress.parse)
    }

    /// A list of at least one address (a single string is accepted), each read by `parse`. `kind` names the addresses
    /// in messages, `forms` the forms accepted.
    func addressList<Address>(_ entry: YAMLReader.Entry, kind: String, forms: String,
                              parse: (String) -> Address?) -> [Address]? {
        guard let items = reader.list(entry, allowSingle: true) else { return nil }
        if items.isEmpty {
            reader.report(line: reader.line(of: entry.value), entry.path, "must list at least one address")
            return nil
        }
        var result: [Address] = []
        for (index, item) in items.enumerated() {
            guard let address = parse(item.text) else {
                reader.report(line: item.line, "\(entry.path)[\(index)]",
                              "invalid \(kind) address \(item.shown) (use \(forms))")
                continue
            }
            result.append(address)
        }
        return result.count == items.count ? result : nil
    }

    func server(_ entry: YAMLReader.Entry) -> ServerConfig? {
        guard let map = reader.mapping(entry.value, entry.path,
                                       allowed: ["listen", "threads", "http2", "io_uring", "tls", "compression", "limits",
                                                 "trusted_proxies", "buffering"])
        else { return nil }
        var server = ServerConfig()
        if let item = map["listen"], let value = listenList(item) { server.listen = value }
        if let item = map["threads"], let value = reader.int(item, in: 0...4096) { server.threads = value }
        if let item = map["http2"], let value = reader.bool(item) { server.http2 = value }
        if let item = map["io_uring"], let value = reader.bool(item) { server.ioUring = value }
        if let item = map["tls"],
           let tls = reader.mapping(item.value, item.path, allowed: ["listen", "certificate", "private_key"]) {
            let listen = reader.requireKey(tls, "listen").flatMap(listenList)
            let certificateEntry = reader.requireKey(tls, "certificate")
            let certificate = certificateEntry.flatMap { existingFile($0) }
            let key = reader.requireKey(tls, "private_key").flatMap { existingFile($0) }
            if let certificateEntry, let certificate, let key,
               let problem = loader.checkServerCertificate(certificate, key) {
                reader.report(line: reader.line(of: certificateEntry.value, fallback: certificateEntry.keyLine),
                              certificateEntry.path, problem)
            } else if let listen, let certificate, let key {
                server.tls = ServerTLSConfig(listen: listen, certificate: certificate, privateKey: key)
            }
        }
        if let item = map["compression"],
           let compression = reader.mapping(item.value, item.path, allowed: ["gzip", "min_bytes"]) {
            if let gzip = compression["gzip"], let value = reader.bool(gzip) { server.compression.gzip = value }
            if let min = compression["min_bytes"], let value = reader.size(min, allowZero: true) {
                server.compression.minBytes = Int(clamping: value)
            }
        }
        if let item = map["limits"] { limits(item, into: &server.limits) }
        if let item = map["trusted_proxies"], let value = trustedProxies(item) { server.trustedProxies = value }
        bufferingSettings(map, into: &server)
        return server
    }

    /// `server.buffering` (see ``BufferingConfigParser``); without it, the default temporary directory is checked.
    func bufferingSettings(_ map: YAMLReader.Entries, into server: inout ServerConfig) {
        if let item = map["buffering"] {
            if let value = BufferingConfigParser.buffering(item, reader: reader,
                                                           tempDirectoryProblem: BufferingConfig.tempDirectoryProblemOnDisk) {
                server.buffering = value
            }
        } else {
            BufferingConfigParser.checkDefaultTempDirectory(line: map.line, reader: reader,
                                                            tempDirectoryProblem: BufferingConfig.tempDirectoryProblemOnDisk)
        }
    }

    /// `server.trusted_proxies`: addresses and CIDR blocks.
    func trustedProxies(_ entry: YAMLReader.Entry) -> [IPBlock]? {
        guard let items = reader.list(entry, allowSingle: true) else { return nil }
        var blocks: [IPBlock] = []
        for (index, item) in items.enumerated() {
            guard let block = IPBlock(parsing: item.text) else {
                reader.report(line: item.line, "\(entry.path)[\(index)]",
                              "invalid address or CIDR block \(item.shown) (use 10.0.0.0/8, 192.0.2.10 or 2001:db8::/32)")
                continue
            }
            blocks.append(block)
        }
        return blocks.count == items.count ? blocks : nil
    }

    func limits(_ entry: YAMLReader.Entry, into limits: inout LimitsConfig) {
        guard let map = reader.mapping(entry.value, entry.path, allowed: [
            "max_header_bytes", "max_headers", "max_body_bytes", "header_timeout", "body_timeout", "idle_timeout",
            "send_timeout", "max_connections", "drain_timeout", "min_send_rate", "min_receive_rate", "min_rate_window",
            "max_requests_per_connection",
        ]) else { return }
        if let item = map["max_header_bytes"], let value = reader.size(item) {
            if value > 1 << 24 {
                reader.report(line: reader.line(of: item.value), item.path, "must be at most 16MiB")
            } else {
                limits.maxHeaderBytes = Int(value)
            }
        }
        if let item = map["max_headers"], let value = reader.int(item, in: 1...100_000) { limits.maxHeaders = value }
        if let item = map["max_body_bytes"], let value = reader.size(item) { limits.maxBodyBytes = value }
        if let item = map["header_timeout"], let value = reader.duration(item) { limits.headerTimeout = value }
        if let item = map["body_timeout"], let value = reader.duration(item) { limits.bodyTimeout = value }
        if let item = map["idle_timeout"], let value = reader.duration(item) { limits.idleTimeout = value }
        if let item = map["send_timeout"], let value = reader.duration(item) { limits.sendTimeout = value }
        if let item = map["max_connections"], let value = reader.int(item, in: 1...10_000_000) {
            limits.maxConnections = value
        }
        if let item = map["drain_timeout"], let value = reader.duration(item) { limits.drainTimeout = value }
        if let item = map["max_requests_per_connection"], let value = reader.int(item, in: 0...1_000_000_000) {
            limits.maxRequestsPerConnection = value == 0 ? .max : value
        }
        minimumRates(map, into: &limits)
    }

    /// `server.limits.min_send_rate`, `min_receive_rate` (sizes per second, `1KiB` or `1KiB/s`; 0 disables) and
    /// `min_rate_window` (a duration).
    private func minimumRates(_ map: YAMLReader.Entries, into limits: inout LimitsConfig) {
        if let item = map["min_send_rate"], let value = rate(item) { limits.minSendRate = value }
        if let item = map["min_receive_rate"], let value = rate(item) { limits.minReceiveRate = value }
        if let item = map["min_rate_window"], let value = reader.duration(item) { limits.minRateWindow = value }
    }

    /// A rate in bytes per second: a size, with or without `/s`; may be 0.
    private func rate(_ entry: YAMLReader.Entry) -> Int64? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        var text = value.text.trimmingSpaces()
        if text.hasSuffix("/s") { text.removeLast(2) }
        guard let rate = ConfigValue.parseSize(text) else {
            reader.report(line: value.line, entry.path,
                          "invalid rate \(value.shown) (bytes per second: a size such as 1KiB or 1KiB/s; 0 disables)")
            return nil
        }
        return rate
    }

    /// A file path that must exist; resolved against the config file's directory.
    func existingFile(_ entry: YAMLReader.Entry) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        guard !value.text.isEmpty else {
            reader.report(line: value.line, entry.path, "must not be empty")
            return nil
        }
        let resolved = resolve(value.text)
        guard loader.fileExists(resolved) else {
            reader.report(line: value.line, entry.path,
                          value.fromEnvironment ? "file not found or not readable"
                                                : "file not found or not readable: \(resolved)")
            return nil
        }
        return resolved
    }

    // MARK: admin, logging, clients

    func admin(_ entry: YAMLReader.Entry) -> AdminConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["listen"]) else { return nil }
        var admin = AdminConfig()
        if let item = map["listen"], let value = reader.scalar(item.value, item.path) {
            if let address = ListenAddress.parse(value.text) {
                admin.listen = address
            } else {
                reader.report(line: value.line, item.path,
                              "invalid listen address \(value.shown) (use IP:port, localhost:port or [IPv6]:port)")
            }
        }
        return admin
    }

    func logging(_ entry: YAMLReader.Entry) -> LoggingConfig? {
        guard let map = reader.mapping(entry.value, entry.path,
                                       allowed: ["level", "format", "access_log", "output", "redact_headers"])
        else { return nil }
        var logging = LoggingConfig()
        if let item = map["level"], let value = reader.scalar(item.value, item.path) {
            if let level = Logger.Level(rawValue: value.text) {
                logging.level = level
            } else {
                reader.report(line: value.line, item.path,
                              "invalid level \(value.shown) (trace, debug, info, notice, warning, error or critical)")
            }
        }
        if let item = map["format"], let value = reader.scalar(item.value, item.path) {
            if let format = LoggingConfig.Format(rawValue: value.text) {
                logging.format = format
            } else {
                reader.report(line: value.line, item.path, "invalid format \(value.shown) (json or text)")
            }
        }
        if let item = map["access_log"], let value = reader.bool(item) { logging.accessLog = value }
        if let item = map["output"], let value = reader.scalar(item.value, item.path) {
            switch value.text {
            case "": reader.report(line: value.line, item.path, "must not be empty")
            case "stdout": logging.output = .stdout
            case "stderr": logging.output = .stderr
            default:
                let path = resolve(value.text)
                if let problem = loader.logOutputProblem(path) {
                    reader.report(line: value.line, item.path, value.fromEnvironment ? problem : "\(problem): \(path)")
                } else {
                    logging.output = .file(path)
                }
            }
        }
        if let item = map["redact_headers"], let values = reader.list(item) {
            var names: [String] = []
            for (index, value) in values.enumerated() {
                if HeaderName.isValid(value.text) {
                    names.append(value.text)
                } else {
                    reader.report(line: value.line, "\(item.path)[\(index)]", "invalid header name \(value.shown)")
                }
            }
            logging.redactHeaders = names
        }
        return logging
    }

    func clients(_ entry: YAMLReader.Entry) -> ClientsConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["api_keys"]) else { return nil }
        var clients = ClientsConfig()
        guard let item = map["api_keys"],
              let apiKeys = reader.mapping(item.value, item.path, allowed: ["header", "keys"]) else { return clients }
        var config = APIKeysConfig()
        if let header = apiKeys["header"], let value = reader.string(header) {
            if HeaderName.isValid(value) {
                config.header = value
            } else {
                reader.report(line: reader.line(of: header.value), header.path, "invalid header name")
            }
        }
        if let keysEntry = reader.requireKey(apiKeys, "keys"), let keys = reader.stringMap(keysEntry) {
            if keys.isEmpty { reader.report(line: reader.line(of: keysEntry.value), keysEntry.path, "must not be empty") }
            for key in keys {
                if key.value.text.isEmpty {
                    reader.report(line: key.value.line, key.path, "must not be empty")
                    continue
                }
                if let other = config.keys.first(where: { $0.key.value == key.value.text }) {
                    reader.report(line: key.value.line, key.path, "same key as client '\(other.name)'")
                    continue
                }
                config.keys.append(APIKeysConfig.Client(name: key.key, key: Secret(key.value.text)))
            }
        }
        clients.apiKeys = config
        return clients
    }

    // MARK: upstreams

    func upstreams(_ entry: YAMLReader.Entry) -> [UpstreamConfig] {
        guard let map = reader.mapping(entry.value, entry.path, allowed: nil) else { return [] }
        var result: [UpstreamConfig] = []
        for item in map.items {
            guard Builder.isName(item.key) else {
                reader.report(line: item.keyLine, item.path, "invalid upstream name (use letters, digits, '.', '-', '_')")
                continue
            }
            if let upstream = upstream(item) { result.append(upstream) }
        }
        return result
    }

    static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
    }

    func upstream(_ entry: YAMLReader.Entry) -> UpstreamConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: [
            "base_url", "servers", "headers", "timeout", "pool", "tls", "access_token", "credentials", "validation",
            "stub", "circuit_breaker", "health_check",
        ]) else { return nil }
        var upstream = UpstreamConfig(name: entry.key)
        var ok = true
        if let item = map["stub"] {
            if let stub = stub(item) { upstream.stub = stub } else { ok = false }
        }
        if let item = map["base_url"] {
            if let url = baseURL(item) { upstream.baseURL = url } else { ok = false }
        } else if upstream.stub == nil && !map.has("stub") {
            reader.report(line: map.line, YAMLReader.join(entry.path, "base_url"),
                          "required key is missing (or configure a stub)")
            ok = false
        }
        if let item = map["servers"] {
            if map.has("stub") {
                reader.report(line: item.keyLine, item.path, "a stub upstream has no servers (use them with base_url)")
            } else if let servers = addressList(item, kind: "server", forms: "host:port or [IPv6]:port",
                                                     parse: UpstreamServer.parse) {
                upstream.servers = servers
            } else {
                ok = false
            }
        }
        if let item = map["headers"] {
            if let headers = headers(item) { upstream.headers = headers } else { ok = false }
        }
        if let item = map["timeout"], let timeout = reader.mapping(item.value, item.path, allowed: ["connect", "response"]) {
            if let connect = timeout["connect"], let value = reader.duration(connect) { upstream.timeout.connect = value }
            if let response = timeout["response"], let value = reader.duration(response) {
                upstream.timeout.response = value
            }
        }
        if let item = map["pool"], let pool = reader.mapping(item.value, item.path, allowed: [
            "max_connections", "http2", "max_wait", "max_waiting", "idle_timeout", "max_requests_per_connection",
            "max_share",
        ]) {
            if let max = pool["max_connections"], let value = reader.int(max, in: 1...100_000) {
                upstream.pool.maxConnections = value
            }
            if let wait = pool["max_wait"], let value = reader.duration(wait) { upstream.pool.maxWait = value }
            if let idle = pool["idle_timeout"], let value = reader.duration(idle) { upstream.pool.idleTimeout = value }
            if let waiting = pool["max_waiting"], let value = reader.int(waiting, in: 0...1_000_000) {
                upstream.pool.maxWaiting = value
            }
            if let cap = pool["max_requests_per_connection"], let value = reader.int(cap, in: 0...1_000_000_000) {
                upstream.pool.maxRequestsPerConnection = value
            }
            if let share = pool["max_share"], let value = BufferingConfigParser.maxShare(share, reader: reader) {
                upstream.pool.maxShare = value
            }
            if let mode = pool["http2"], let value = reader.scalar(mode.value, mode.path) {
                if let parsed = UpstreamConfig.HTTP2Mode(rawValue: value.text) {
                    upstream.pool.http2 = parsed
                } else if value.text == "true" || value.text == "false" {
                    upstream.pool.http2 = value.text == "true" ? .always : .never
                } else {
                    reader.report(line: value.line, mode.path, "invalid value \(value.shown) (auto, always or never)")
                }
            }
        }
        if let item = map["tls"], let tls = reader.mapping(item.value, item.path, allowed: ["verify", "ca_file"]) {
            if let verify = tls["verify"], let value = reader.bool(verify) { upstream.tls.verify = value }
            if let ca = tls["ca_file"] { upstream.tls.caFile = loader.caFile(ca, reader: reader) }
        }
        if let item = map["access_token"] {
            if ConfigLoader.declaresOAuth2(item) {
                if let oauth2 = loader.oauth2(item, reader: reader, isStub: map.has("stub")) {
                    upstream.oauth2 = oauth2
                } else {
                    ok = false
                }
            } else if let token = accessToken(item) {
                upstream.accessToken = token
            } else {
                ok = false
            }
        }
        if let item = map["credentials"] {
            if let credentials = credentials(item) { upstream.credentials = credentials } else { ok = false }
            if map.has("access_token") {
                reader.report(line: item.keyLine, item.path, "use either access_token or credentials, not both")
            }
        }
        if let item = map["circuit_breaker"] {
            // A stub's circuit counts its faults with `mode: upstream` and its 502-504 answers, as a real upstream's.
            if let breaker = reader.mapping(item.value, item.path, allowed: ["failures", "open_for"]) {
                var config = CircuitBreakerConfig()
                if let failures = breaker["failures"], let value = reader.int(failures, in: 1...1_000_000) {
                    config.failures = value
                }
                if let openFor = breaker["open_for"], let value = reader.duration(openFor) { config.openFor = value }
                upstream.circuitBreaker = config
            }
        }
        if let item = map["health_check"] {
            if map.has("stub") {
                reader.report(line: item.keyLine, item.path, "a stub upstream has no servers to check (use it with base_url)")
                ok = false
            } else if let check = healthCheck(item) {
                upstream.healthCheck = check
            } else {
                ok = false
            }
        }
        if let item = map["validation"], let value = reader.scalar(item.value, item.path) {
            if let validation = UpstreamConfig.Validation(rawValue: value.text) {
                upstream.validation = validation
            } else {
                reader.report(line: value.line, item.path,
                              "invalid value \(value.shown) (none, success or success_and_redirect)")
            }
        }
        return ok ? upstream : nil
    }

    func baseURL(_ entry: YAMLReader.Entry) -> UpstreamURL? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        switch UpstreamURLParser.parse(value.text) {
        case .success(let url): return url
        case .failure(let error):
            reader.report(line: value.line, entry.path, "invalid base_url: \(value.hidingReason(error.reason))")
            return nil
        }
    }

    func headers(_ entry: YAMLReader.Entry) -> HTTPFields? {
        guard let pairs = reader.stringMap(entry) else { return nil }
        var headers = HTTPFields()
        var ok = true
        for pair in pairs {
            guard HeaderName.isValid(pair.key) else {
                reader.report(line: pair.value.line, pair.path, "invalid header name")
                ok = false
                continue
            }
            guard HeaderName.isValidValue(pair.value.text) else {
                reader.report(line: pair.value.line, pair.path, "invalid header value (control characters)")
                ok = false
                continue
            }
            headers.add(name: pair.key, value: pair.value.text)
        }
        return ok ? headers : nil
    }

    func accessToken(_ entry: YAMLReader.Entry) -> UpstreamConfig.AccessToken? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["type", "token", "scheme"]) else { return nil }
        let token = reader.requireKey(map, "token").flatMap { reader.string($0) }
        if let token, !HeaderName.isValidValue(token) {
            reader.report(line: map.line, YAMLReader.join(entry.path, "token"), "contains control characters")
            return nil
        }
        var kind: UpstreamConfig.AccessToken.Kind? = .bearer
        var typeText = "bearer"
        if let item = map["type"], let value = reader.scalar(item.value, item.path) {
            typeText = value.text
            switch value.text {
            case "bearer": kind = .bearer
            case "basic": kind = .basic
            case "custom":
                if let schemeEntry = reader.requireKey(map, "scheme"), let scheme = reader.string(schemeEntry) {
                    if HeaderName.isValid(scheme) {
                        kind = .custom(scheme: scheme)
                    } else {
                        reader.report(line: reader.line(of: schemeEntry.value), schemeEntry.path, "invalid scheme")
                        kind = nil
                    }
                } else {
                    kind = nil
                }
            default:
                reader.report(line: value.line, item.path,
                              "invalid type \(value.shown) (bearer, basic, custom or oauth2_client_credentials)")
                kind = nil
            }
        }
        if let scheme = map["scheme"], kind != nil, typeText != "custom" {
            reader.report(line: scheme.keyLine, scheme.path, "scheme is only used with type: custom")
        }
        guard let token, let kind else { return nil }
        return UpstreamConfig.AccessToken(type: kind, token: Secret(token))
    }

    func credentials(_ entry: YAMLReader.Entry) -> UpstreamConfig.Credentials? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["user", "password", "preemptive"]) else {
            return nil
        }
        let user = reader.requireKey(map, "user").flatMap { reader.string($0) }
        let password = reader.requireKey(map, "password").flatMap { reader.string($0, nonEmpty: false) }
        if let user, user.contains(":") {
            reader.report(line: map.line, YAMLReader.join(entry.path, "user"), "must not contain ':'")
            return nil
        }
        var preemptive = false
        if let item = map["preemptive"], let value = reader.bool(item) { preemptive = value }
        guard let user, let password else { return nil }
        return UpstreamConfig.Credentials(user: user, password: Secret(password), preemptive: preemptive)
    }

    func stub(_ entry: YAMLReader.Entry) -> StubConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: [
            "status", "headers", "body", "body_file", "body_bytes", "delay", "latency", "error_rate", "error_status",
            "faults", "template", "seed", "responses",
        ]) else { return nil }
        var stub = StubConfig()
        var ok = true
        if let item = map["status"] {
            if let value = reader.int(item, in: 200...599) { stub.status = value } else { ok = false }
        }
        if let item = map["headers"] {
            if let headers = headers(item) { stub.headers = headers } else { ok = false }
        }
        let bodySources = ["body", "body_file", "body_bytes"].filter { map.has($0) }
        if bodySources.count > 1 {
            reader.report(line: map.line, entry.path,
                          "use only one of body, body_file and body_bytes (found \(bodySources.joined(separator: ", ")))")
            ok = false
        }
        if let item = map["body"], let value = reader.scalar(item.value, item.path) {
            stub.body = Array(value.text.utf8)
        }
        if let item = map["body_file"], let value = reader.scalar(item.value, item.path) {
            let resolved = resolve(value.text)
            if value.text.isEmpty {
                reader.report(line: value.line, item.path, "must not be empty")
                ok = false
            } else if let bytes = loader.readFile(resolved) {
                stub.body = bytes
                stub.bodyFile = resolved
            } else {
                reader.report(line: value.line, item.path,
                              value.fromEnvironment ? "cannot read the file" : "cannot read the file \(resolved)")
                ok = false
            }
        }
        if let item = map["body_bytes"] {
            if let size = reader.size(item, allowZero: true) {
                if size > 1 << 30 {
                    reader.report(line: reader.line(of: item.value), item.path, "must be at most 1GiB")
                    ok = false
                } else {
                    stub.bodyBytes = Int(size)
                    stub.body = StubBody.generate(count: Int(size))
                }
            } else {
                ok = false
            }
        }
        if let item = map["delay"] {
            if let value = reader.duration(item, allowZero: true) { stub.delay = value } else { ok = false }
        }
        if let item = map["latency"] {
            if map.has("delay") {
                reader.report(line: item.keyLine, item.path, "use either delay or latency, not both")
                ok = false
            }
            if let latency = latency(item) { stub.latency = latency } else { ok = false }
        }
        if let item = map["error_rate"] {
            if let value = reader.double(item, in: 0...1) { stub.errorRate = value } else { ok = false }
        }
        if let item = map["error_status"] {
            if let value = reader.int(item, in: 400...599) { stub.errorStatus = value } else { ok = false }
        }
        if !stubAnswers(map, entry, into: &stub) { ok = false }
        return ok ? stub : nil
    }

    func latency(_ entry: YAMLReader.Entry) -> StubLatencyConfig? {
        guard let map = reader.mapping(entry.value, entry.path,
                                       allowed: ["distribution", "min", "max", "mean", "stddev", "median", "sigma"])
        else { return nil }
        guard let kindEntry = reader.requireKey(map, "distribution"),
              let kind = reader.scalar(kindEntry.value, kindEntry.path) else { return nil }
        func value(_ key: String, required: Bool) -> (Duration?, Bool) {
            if let item = map[key] {
                let parsed = reader.duration(item, allowZero: true)
                return (parsed, parsed != nil)
            }
            if required {
                reader.report(line: map.line, YAMLReader.join(entry.path, key),
                              "required key is missing for distribution: \(kind.text)")
                return (nil, false)
            }
            return (nil, true)
        }
        func unused(_ keys: [String]) -> Bool {
            var ok = true
            for key in keys {
                if let item = map[key] {
                    reader.report(line: item.keyLine, item.path, "not used by distribution: \(kind.text)")
                    ok = false
                }
            }
            return ok
        }
        switch kind.text {
        case "fixed":
            let (mean, ok) = value("mean", required: true)
            guard unused(["min", "max", "stddev", "median", "sigma"]), ok, let mean else { return nil }
            return .fixed(mean)
        case "uniform":
            let (min, ok1) = value("min", required: true)
            let (max, ok2) = value("max", required: true)
            guard unused(["mean", "stddev", "median", "sigma"]), ok1, ok2, let min, let max else { return nil }
            guard min <= max else {
                reader.report(line: map.line, YAMLReader.join(entry.path, "max"), "must not be less than min")
                return nil
            }
            return .uniform(min: min, max: max)
        case "normal":
            let (mean, ok1) = value("mean", required: true)
            let (stddev, ok2) = value("stddev", required: true)
            let (min, ok3) = value("min", required: false)
            let (max, ok4) = value("max", required: false)
            guard unused(["median", "sigma"]), ok1, ok2, ok3, ok4, let mean, let stddev else { return nil }
            if let min, let max, min > max {
                reader.report(line: map.line, YAMLReader.join(entry.path, "max"), "must not be less than min")
                return nil
            }
            return .normal(mean: mean, stddev: stddev, min: min, max: max)
        case "lognormal":
            let (median, ok1) = value("median", required: true)
            var sigma: Double?
            if let item = map["sigma"] {
                sigma = reader.double(item, in: 0...10)
            } else {
                reader.report(line: map.line, YAMLReader.join(entry.path, "sigma"),
                              "required key is missing for distribution: \(kind.text)")
            }
            let (min, ok3) = value("min", required: false)
            let (max, ok4) = value("max", required: false)
            guard unused(["mean", "stddev"]), ok1, ok3, ok4, let median, let sigma else { return nil }
            if let min, let max, min > max {
                reader.report(line: map.line, YAMLReader.join(entry.path, "max"), "must not be less than min")
                return nil
            }
            return .lognormal(median: median, sigma: sigma, min: min, max: max)
        default:
            reader.report(line: kind.line, kindEntry.path,
                          "invalid distribution \(kind.shown) (fixed, uniform, normal or lognormal)")
            return nil
        }
    }

    // MARK: routes

    func routes(_ entry: YAMLReader.Entry, declaredUpstreams: [String], stubUpstreams: Set<String>,
                clients: ClientsConfig?) -> [RouteConfig] {
        guard case .sequence(let sequence) = entry.value else {
            reader.report(line: reader.line(of: entry.value), entry.path,
                          "expected a list, got \(YAMLReader.kindName(entry.value))")
            return []
        }
        var result: [RouteConfig] = []
        var seenNames: [String: Int] = [:]
        /// How messages name each route: its name, or a neutral phrase when the name came from the environment.
        var shownNames: [Int: String] = [:]
        var matchesSeen: [(index: Int, route: RouteConfig)] = []
        for (index, node) in sequence.enumerated() {
            let path = "\(entry.path)[\(index)]"
            guard let map = reader.mapping(node, path, allowed: [
                "name", "match", "upstream", "rewrite", "coalesce", "coalesce_vary", "clients", "timeout", "retries",
                "rate_limit", "websocket", "max_body_bytes", "buffering",
            ]) else { continue }
            let nameEntry = reader.requireKey(map, "name")
            let nameValue = nameEntry.flatMap { reader.nonEmptyScalar($0) }
            let name = nameValue?.text
            if let nameValue { shownNames[index] = nameValue.shown }
            if let name, let nameValue, let nameEntry {
                if let first = seenNames[name] {
                    reader.report(line: reader.line(of: nameEntry.value), nameEntry.path,
                                  "duplicate route name \(nameValue.shown) (also routes[\(first)])")
                } else {
                    seenNames[name] = index
                }
            }
            let matchEntry = reader.requireKey(map, "match")
            let match = matchEntry.flatMap { self.match($0) }
            var upstreamName: String?
            if let item = reader.requireKey(map, "upstream"), let value = reader.nonEmptyScalar(item) {
                if declaredUpstreams.contains(value.text) {
                    upstreamName = value.text
                } else {
                    reader.report(line: reader.line(of: item.value), item.path,
                                  "unknown upstream \(value.shown) (not defined under upstreams)")
                }
            }
            guard let name, let match, let upstreamName else {
                // Still validate the remaining keys for their own problems.
                _ = routeOptions(map, match: nil, clients: clients)
                continue
            }
            var route = RouteConfig(name: name, match: match, upstream: upstreamName)
            guard let options = routeOptions(map, match: match, clients: clients) else { continue }
            route.rewrite = options.rewrite
            route.coalesce = options.coalesce
            route.coalesceVary = options.coalesceVary
            route.clients = options.clients
            route.timeout = options.timeout
            route.retries = options.retries
            route.rateLimit = options.rateLimit
            route.websocket = options.websocket
            route.websocketIdleTimeout = options.websocketIdleTimeout
            route.maxBodyBytes = options.maxBodyBytes
            if let item = map["buffering"], let value = reader.bool(item) { route.buffering = value }
            if route.websocket, let item = map["websocket"] {
                let line = reader.line(of: item.value)
                if stubUpstreams.contains(upstreamName) {
                    reader.report(line: line, item.path,
                                  "a stub upstream cannot answer a WebSocket handshake (upstream '\(upstreamName)' has stub)")
                } else if route.coalesce {
                    reader.report(line: line, item.path, "a WebSocket route cannot coalesce (set coalesce: false)")
                } else if let methods = route.match.methods, !methods.contains(.get) {
                    reader.report(line: line, item.path, "a WebSocket handshake is a GET: add GET to match.methods")
                }
            }
            if let shadowing = Builder.shadowingRoute(route, matchesSeen) {
                reader.report(line: matchEntry.map { reader.line(of: $0.value, fallback: map.line) } ?? map.line,
                              "\(path).match",
                              "duplicate match: every request it matches is already taken by routes[\(shadowing.index)] (\(shownNames[shadowing.index] ?? "unnamed"))")
            }
            matchesSeen.append((index, route))
            result.append(route)
        }
        return result
    }

    /// An earlier route with the same path, kind and host whose methods cover all of `route`'s methods.
    static func shadowingRoute(_ route: RouteConfig,
                               _ earlier: [(index: Int, route: RouteConfig)]) -> (index: Int, route: RouteConfig)? {
        let same = earlier.filter {
            $0.route.match.path == route.match.path && $0.route.match.pathPrefix == route.match.pathPrefix
                && $0.route.match.pathParams.map(Builder.templateShape) == route.match.pathParams.map(Builder.templateShape)
                && $0.route.match.host == route.match.host
        }
        guard !same.isEmpty else { return nil }
        if same.contains(where: { $0.route.match.methods == nil }) {
            return same.first { $0.route.match.methods == nil }
        }
        guard let methods = route.match.methods else { return nil }
        var covered = Set<HTTPMethod>()
        for entry in same {
            for method in entry.route.match.methods ?? [] {
                covered.insert(method)
                if method == .get { covered.insert(.head) }
            }
        }
        return methods.allSatisfy(covered.contains) ? same.last : nil
    }

    /// A template with its parameter names erased (`/a/{id}` and `/a/{x}` match the same requests).
    static func templateShape(_ template: String) -> String {
        template.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("{") ? "{}" : String($0) }.joined(separator: "/")
    }

    struct RouteOptions {
        var rewrite: RouteConfig.Rewrite?
        var coalesce = false
        var coalesceVary: [String] = []
        var clients: [String]?
        var timeout: Duration?
        var retries: RouteConfig.Retries?
        var rateLimit: RateLimitConfig?
        var websocket = false
        var websocketIdleTimeout: Duration?
        var maxBodyBytes: Int64?
    }

    func routeOptions(_ map: YAMLReader.Entries, match: RouteConfig.Match?, clients: ClientsConfig?) -> RouteOptions? {
        var options = RouteOptions()
        var ok = true
        if let item = map["rewrite"] {
            if let rewrite = rewrite(item, match: match) { options.rewrite = rewrite } else { ok = false }
        }
        if let item = map["coalesce"] {
            if let value = reader.bool(item) { options.coalesce = value } else { ok = false }
        }
        if let item = map["websocket"] {
            if case .mapping = item.value {
                // `{ idle_timeout: 10m }`: on, with its own idle limit.
                if let settings = reader.mapping(item.value, item.path, allowed: ["idle_timeout"]) {
                    options.websocket = true
                    if let idle = settings["idle_timeout"] {
                        if let value = reader.duration(idle) { options.websocketIdleTimeout = value } else { ok = false }
                    }
                } else {
                    ok = false
                }
            } else if let value = reader.bool(item) {
                options.websocket = value
            } else {
                ok = false
            }
        }
        if let item = map["coalesce_vary"] {
            if let values = reader.list(item) {
                for (index, value) in values.enumerated() {
                    if HeaderName.isValid(value.text) {
                        options.coalesceVary.append(value.text)
                    } else {
                        reader.report(line: value.line, "\(item.path)[\(index)]", "invalid header name \(value.shown)")
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        if let item = map["clients"] {
            if let values = reader.list(item) {
                let known = clients?.apiKeys?.keys.map(\.name)
                var names: [String] = []
                for (index, value) in values.enumerated() {
                    if let known {
                        if known.contains(value.text) {
                            names.append(value.text)
                        } else {
                            reader.report(line: value.line, "\(item.path)[\(index)]",
                                          "unknown client \(value.shown) (not defined under clients.api_keys.keys)")
                            ok = false
                        }
                    }
                }
                if known == nil {
                    reader.report(line: reader.line(of: item.value), item.path,
                                  "route lists clients but clients.api_keys is not configured")
                    ok = false
                }
                options.clients = names
            } else {
                ok = false
            }
        }
        if let item = map["timeout"] {
            if let value = reader.duration(item) { options.timeout = value } else { ok = false }
        }
        if let item = map["retries"] {
            if let retries = retries(item) { options.retries = retries } else { ok = false }
        }
        if let item = map["rate_limit"] {
            if let limit = rateLimit(item) { options.rateLimit = limit } else { ok = false }
        }
        if let item = map["max_body_bytes"] {
            if let value = reader.size(item, allowZero: true) { options.maxBodyBytes = value } else { ok = false }
        }
        return ok ? options : nil
    }

    func healthCheck(_ entry: YAMLReader.Entry) -> HealthCheckConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: [
            "path", "interval", "timeout", "unhealthy_after", "healthy_after", "headers",
        ]) else { return nil }
        var ok = true
        var path = "/"
        if let item = reader.requireKey(map, "path"), let value = reader.string(item) {
            if value.hasPrefix("/") && !value.contains(where: { $0 == " " || $0 == "#" || $0.isNewline }) {
                path = value
            } else {
                reader.report(line: reader.line(of: item.value), item.path,
                              "must be an origin-form path starting with '/' (e.g. /healthz)")
                ok = false
            }
        } else {
            ok = false
        }
        var check = HealthCheckConfig(path: path)
        if let item = map["interval"] {
            if let value = reader.duration(item) { check.interval = value } else { ok = false }
        }
        if let item = map["timeout"] {
            if let value = reader.duration(item) { check.timeout = value } else { ok = false }
        }
        if let item = map["unhealthy_after"] {
            if let value = reader.int(item, in: 1...100) { check.unhealthyAfter = value } else { ok = false }
        }
        if let item = map["healthy_after"] {
            if let value = reader.int(item, in: 1...100) { check.healthyAfter = value } else { ok = false }
        }
        if let item = map["headers"] {
            if let headers = headers(item) { check.headers = headers } else { ok = false }
        }
        return ok ? check : nil
    }

    func rateLimit(_ entry: YAMLReader.Entry) -> RateLimitConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["requests", "per", "burst", "by"]) else {
            return nil
        }
        let requests = reader.requireKey(map, "requests").flatMap { reader.int($0, in: 1...1_000_000_000) }
        var limit = RateLimitConfig(requests: requests ?? 1)
        var ok = requests != nil
        if let item = map["per"] {
            if let value = reader.duration(item) { limit.per = value } else { ok = false }
        }
        if let item = map["burst"] {
            if let value = reader.int(item, in: 1...1_000_000_000) { limit.burst = value } else { ok = false }
        }
        if let item = map["by"], let value = reader.scalar(item.value, item.path) {
            if let scope = RateLimitConfig.Scope(rawValue: value.text) {
                limit.by = scope
            } else {
                reader.report(line: value.line, item.path, "invalid value \(value.shown) (caller or route)")
                ok = false
            }
        }
        return ok ? limit : nil
    }

    func retries(_ entry: YAMLReader.Entry) -> RouteConfig.Retries? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["attempts", "statuses", "backoff"]) else {
            return nil
        }
        guard let attemptsEntry = reader.requireKey(map, "attempts") else { return nil }
        let attempts = reader.int(attemptsEntry, in: 1...10)
        var retries = RouteConfig.Retries(attempts: attempts ?? 1)
        var ok = attempts != nil
        if let item = map["statuses"] {
            if let values = reader.list(item) {
                for (index, value) in values.enumerated() {
                    if let status = Int(value.text), (500...599).contains(status) || status == 429 || status == 408 {
                        retries.statuses.append(status)
                    } else {
                        reader.report(line: value.line, "\(item.path)[\(index)]",
                                      "invalid retry status \(value.shown) (408, 429 or 5xx)")
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        if let item = map["backoff"] {
            if let value = reader.duration(item) { retries.backoff = value } else { ok = false }
        }
        return ok ? retries : nil
    }

    func rewrite(_ entry: YAMLReader.Entry, match: RouteConfig.Match?) -> RouteConfig.Rewrite? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["strip_prefix", "add_prefix"]) else {
            return nil
        }
        var rewrite = RouteConfig.Rewrite()
        var ok = true
        if let item = map["strip_prefix"] {
            if let value = routePath(item, stripTrailingSlash: true) {
                rewrite.stripPrefix = value
                if let match {
                    let literal = match.path ?? match.pathPrefix ?? match.pathParams ?? "/"
                    let prefixSegments = PathNormalizer.segments(of: value)
                    let matchSegments = PathNormalizer.segments(of: literal)
                    let applies = prefixSegments.count <= matchSegments.count
                        && zip(prefixSegments, matchSegments).allSatisfy { $0 == $1 && !$1.hasPrefix("{") }
                    if !applies {
                        reader.report(line: reader.line(of: item.value), item.path,
                                      "strip_prefix is not a prefix of the route's match path")
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        if let item = map["add_prefix"] {
            if let value = routePath(item, stripTrailingSlash: true) { rewrite.addPrefix = value } else { ok = false }
        }
        return ok ? rewrite : nil
    }

    /// A path from the config, normalised; must already be in normal form apart from unreserved escapes.
    func routePath(_ entry: YAMLReader.Entry, stripTrailingSlash: Bool) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        guard value.text.hasPrefix("/") else {
            reader.report(line: value.line, entry.path, "must start with '/'")
            return nil
        }
        switch PathNormalizer.normalize(path: value.text) {
        case .failure(let error):
            reader.report(line: value.line, entry.path, "invalid path: \(error.reason)")
            return nil
        case .success(var normalized):
            let segments = value.text.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            if segments.dropLast().contains(where: { $0.isEmpty }) || segments.contains(where: { $0 == "." || $0 == ".." }) {
                reader.report(line: value.line, entry.path, "path must not contain empty, '.' or '..' segments")
                return nil
            }
            if stripTrailingSlash, normalized.count > 1, normalized.hasSuffix("/") { normalized.removeLast() }
            return normalized
        }
    }

    /// A `path_params` template: `{name}` segments are set aside, the literal rest is checked and normalised.
    func templatePath(_ entry: YAMLReader.Entry) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        var parameters: [String] = []
        let probe = value.text.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count >= 2 else { return String(segment) }
            parameters.append(String(segment))
            return "moya-param-\(parameters.count - 1)-"
        }.joined(separator: "/")
        let probeEntry = YAMLReader.Entry(key: entry.key, keyLine: entry.keyLine,
                                          value: .scalar(Node.Scalar(probe, Tag(.implicit, .basic), .plain, entry.value.mark)),
                                          path: entry.path)
        guard let normalized = routePath(probeEntry, stripTrailingSlash: false) else { return nil }
        var result = normalized
        for (index, parameter) in parameters.enumerated() {
            result = result.replacingOccurrences(of: "moya-param-\(index)-", with: parameter)
        }
        return result
    }

    func match(_ entry: YAMLReader.Entry) -> RouteConfig.Match? {
        guard let map = reader.mapping(entry.value, entry.path,
                                       allowed: ["path", "path_prefix", "path_params", "methods", "host"]) else {
            return nil
        }
        var match = RouteConfig.Match()
        var ok = true
        let kinds = ["path", "path_prefix", "path_params"].filter { map.has($0) }
        if kinds.isEmpty {
            reader.report(line: map.line, entry.path, "one of path, path_prefix or path_params is required")
            ok = false
        } else if kinds.count > 1 {
            reader.report(line: map.line, entry.path,
                          "use only one of path, path_prefix and path_params (found \(kinds.joined(separator: ", ")))")
            ok = false
        }
        if let item = map["path"] {
            if let value = routePath(item, stripTrailingSlash: false) { match.path = value } else { ok = false }
        }
        if let item = map["path_prefix"] {
            if let value = routePath(item, stripTrailingSlash: true) { match.pathPrefix = value } else { ok = false }
        }
        if let item = map["path_params"] {
            if let value = templatePath(item), validateTemplate(value, item) {
                match.pathParams = value
            } else {
                ok = false
            }
        }
        if let item = map["methods"] {
            if let values = reader.list(item) {
                if values.isEmpty {
                    reader.report(line: reader.line(of: item.value), item.path,
                                  "must list at least one method (omit the key to allow every method)")
                    ok = false
                }
                var methods: [HTTPMethod] = []
                for (index, value) in values.enumerated() {
                    let itemPath = "\(item.path)[\(index)]"
                    if value.text == "CONNECT" || value.text == "TRACE" {
                        // The gateway answers both with 405 itself (no tunnels; TRACE would echo injected credentials).
                        reader.report(line: value.line, itemPath, "\(value.text) is never routed")
                        ok = false
                    } else if !value.text.isEmpty,
                              value.text.allSatisfy({ $0.isASCII && ($0.isUppercase || $0 == "-" || $0 == "_") }) {
                        if !methods.contains(HTTPMethod(value.text)) { methods.append(HTTPMethod(value.text)) }
                    } else {
                        reader.report(line: value.line, itemPath,
                                      "invalid method \(value.shown) (methods are case-sensitive upper-case tokens, e.g. GET)")
                        ok = false
                    }
                }
                match.methods = methods
            } else {
                ok = false
            }
        }
        if let item = map["host"], let value = reader.string(item) {
            let host = value.lowercased()
            let valid = host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2
                ? host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
                : host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }
            if valid {
                match.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            } else {
                reader.report(line: reader.line(of: item.value), item.path,
                              "invalid host (a name or address without port)")
                ok = false
            }
        }
        return ok ? match : nil
    }

    func validateTemplate(_ template: String, _ entry: YAMLReader.Entry) -> Bool {
        // A template that came from the environment or a secret file is never quoted, not even a parameter's name.
        let hidden = reader.scalar(entry.value, entry.path).map { $0.fromEnvironment || $0.fromSecretFile } ?? false
        func shown(_ name: Substring) -> String { hidden ? "(a value from the environment)" : "'\(name)'" }
        var names = Set<String>()
        for segment in PathNormalizer.segments(of: template) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                let name = segment.dropFirst().dropLast()
                guard YAMLReader.isVariableName(name) else {
                    reader.report(line: reader.line(of: entry.value), entry.path, "invalid parameter name \(shown(name))")
                    return false
                }
                guard names.insert(String(name)).inserted else {
                    reader.report(line: reader.line(of: entry.value), entry.path, "duplicate parameter \(shown(name))")
                    return false
                }
            } else if segment.contains("{") || segment.contains("}") {
                reader.report(line: reader.line(of: entry.value), entry.path,
                              "a parameter must be a whole segment, like /users/{id}")
                return false
            }
        }
        if names.isEmpty {
            reader.report(line: reader.line(of: entry.value), entry.path,
                          "has no {parameter} (use path for an exact path)")
            return false
        }
        return true
    }
}

/// Generated stub bodies for `body_bytes`.
enum StubBody {
    /// `count` bytes of a repeating printable pattern.
    static func generate(count: Int) -> [UInt8] {
        let pattern = Array("moya-gateway stub body 0123456789abcdefghijklmnopqrstuvwxyz\n".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(max(0, count))
        var index = 0
        while bytes.count < count {
            bytes.append(pattern[index])
            index = (index + 1) % pattern.count
        }
        return bytes
    }
}

/// Header-name and value checks (RFC 9110 token, field-value without controls).
enum HeaderName {
    static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(isTokenByte)
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func isValidValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}
