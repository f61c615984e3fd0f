/// The whole gateway configuration file (`Configuration/gateway.yaml`), validated and with defaults applied.
///
/// Produced only by ``ConfigLoader``; every value here has passed the schema checks described in
/// `docs/configuration.md`. Relative file paths (TLS files, `ca_file`, stub `body_file`) are already resolved against the
/// configuration file's directory.
package struct GatewayConfig: Sendable, Equatable {
    /// The path of the file this configuration was loaded from, as given to the loader.
    package var sourcePath: String
    package var server: ServerConfig
    package var admin: AdminConfig
    package var logging: LoggingConfig
    /// Who may call the gateway; `nil` when the file has no `clients` section (everyone may).
    package var clients: ClientsConfig?
    /// Upstreams in declaration order; names are unique.
    package var upstreams: [UpstreamConfig]
    /// Routes in declaration order (the router orders them by precedence); names are unique.
    package var routes: [RouteConfig]
    /// `reload`: reloading when the files change.
    package var reload = ReloadConfig()

    package init(
        sourcePath: String, server: ServerConfig = ServerConfig(), admin: AdminConfig = AdminConfig(),
        logging: LoggingConfig = LoggingConfig(), clients: ClientsConfig? = nil,
        upstreams: [UpstreamConfig] = [], routes: [RouteConfig] = []
    ) {
        self.sourcePath = sourcePath
        self.server = server
        self.admin = admin
        self.logging = logging
        self.clients = clients
        self.upstreams = upstreams
        self.routes = routes
    }

    /// The upstream called `name`, if declared.
    package func upstream(named name: String) -> UpstreamConfig? {
        upstreams.first { $0.name == name }
    }
}
