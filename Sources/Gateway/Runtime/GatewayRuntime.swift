import Foundation
import HTTPServerCore
import HTTPWire
import Locking
import Logging
import NetCore
import Prometheus

/// A running gateway: the main listeners, the admin listener, the current configuration snapshot, reload and drain.
package final class GatewayRuntime: Sendable {
    package let group: EventLoopGroup
    package let logger: Logger
    private let telemetry: Telemetry
    private let state: GatewayStateBox
    private let server: HTTPServer
    private let adminServer: HTTPServer
    private let admin: AdminHandler
    private let startedConfig: GatewayConfig
    /// The TLS certificate and key being served: their paths and a hash of their contents, so that a reload loads
    /// them again when either changed (a renewal replaces the files in place).
    private let servedTLSFiles: Locked<TLSFiles?>
    /// Reloads one at a time (SIGHUP and the file watch may ask at once).
    private let reloading = Locked(())
    /// The logging settings a reload changes (level, format, access log, redaction).
    private let logSettings: LogSettings
    /// The main listeners' request handler, for in-process benchmarks (`GatewayBench`).
    package let handler: HTTPServerHandler
    private let gatewayHandler: GatewayHandler
    /// Response buffering's settings, accounting and metrics (`server.buffering`).
    private let buffering: ResponseBuffering

    /// Builds the runtime for `config`; nothing is bound until ``start()``. With `recorder` (`moya-gateway record`),
    /// every proxied exchange is also handed to it.
    package init(config: GatewayConfig, recorder: ExchangeRecorder? = nil) throws {
        let group = try EventLoopGroup(threads: config.server.threads, batchedSends: config.server.ioUring)
        self.group = group
        let sink = try LogSink(destination: config.logging.output.sinkDestination)
        let logSettings = LogSettings(config.logging)
        self.logSettings = logSettings
        let logger = Logger(label: "moya-gateway") { _ in JSONLogHandler(sink: sink, settings: logSettings) }
        self.logger = logger
        let registry = PrometheusCollectorRegistry()
        telemetry = Telemetry(registry: registry, sink: sink, settings: logSettings)
        let buffering = ResponseBuffering(config.server.buffering, telemetry: telemetry) { message, reason in
            logger.warning("\(message)", metadata: ["reason": .string(reason)])
        }
        // What a crash left in the temporary directory goes, and a directory where no file can be made stops the
        // start rather than the first long answer.
        try buffering.prepareDirectory()
        self.buffering = buffering
        telemetry.addScrapeSource { buffering.updateGauges() }
        telemetry.countDroppedLogLines(of: sink)
        state = GatewayStateBox(GatewaySnapshot(config: config, group: group, telemetry: telemetry, logger: logger))
        startedConfig = config
        servedTLSFiles = Locked(TLSFiles(config))
        let limits = Self.serverLimits(config)
        let listen = try config.server.listen.map(Self.socketAddress)
        let tlsListen = try (config.server.tls?.listen ?? []).map(Self.socketAddress)
        let tls = config.server.tls.map {
            TLSServerConfiguration(
                defaultCertificate: TLSCertificateFiles(
                    certificateChainPath: $0.certificate, privateKeyPath: $0.privateKey))
        }
        let compression =
            config.server.compression.gzip
            ? CompressionPolicy(minimumBytes: config.server.compression.minBytes) : nil
        let gatewayHandler = GatewayHandler(state: state, buffering: buffering, recorder: recorder)
        self.gatewayHandler = gatewayHandler
        handler = gatewayHandler
        // WebSockets over HTTP/2 (RFC 8441) are offered on every connection; a route that does not relay them
        // refuses them (405).
        var http2Settings = HTTP2Settings()
        http2Settings.enableConnectProtocol = true
        let events = telemetry.serverEvents(acceptFailures: AcceptFailureReport())
        // The request cap is `server.limits.max_requests_per_connection` alone (reloadable: `HTTPServerLimits`).
        http2Settings.maxRequestsPerConnection = nil
        server = HTTPServer(
            configuration: .init(
                listen: listen, tlsListen: tlsListen, tls: tls, limits: limits,
                http2: config.server.http2, http2Settings: http2Settings,
                compression: compression, events: events),
            group: group, handler: handler)
        let mainServer = server
        admin = AdminHandler(telemetry: telemetry) { mainServer.openConnections }
        adminServer = HTTPServer(
            configuration: .init(listen: [try Self.socketAddress(config.admin.listen)], events: events),
            group: group, handler: admin)
    }

    /// The HTTP server's limits for `config`. Its body limit is the largest any route takes (a route's own
    /// `max_body_bytes` is checked by the gateway), so that an upload route may take more than the server's default.
    static func serverLimits(_ config: GatewayConfig) -> HTTPServerLimits {
        var limits = config.server.limits.server
        limits.maxBodyBytes = config.routes.reduce(limits.maxBodyBytes) { max($0, $1.maxBodyBytes ?? 0) }
        return limits
    }

    /// The settings a reload cannot apply (they shape the listeners, the loops or the log's output), changed between
    /// `started` and `new`. The TLS certificate and key are reloaded (see ``reload(with:)``); the TLS listeners are not.
    static func keysNeedingRestart(from started: GatewayConfig, to new: GatewayConfig) -> [String] {
        var keys: [String] = []
        if new.server.listen != started.server.listen { keys.append("server.listen") }
        if (new.server.tls == nil) != (started.server.tls == nil) {
            keys.append("server.tls")
        } else if new.server.tls?.listen != started.server.tls?.listen {
            keys.append("server.tls.listen")
        }
        if new.server.threads != started.server.threads { keys.append("server.threads") }
        if new.server.http2 != started.server.http2 { keys.append("server.http2") }
        if new.server.ioUring != started.server.ioUring { keys.append("server.io_uring") }
        if new.server.compression != started.server.compression { keys.append("server.compression") }
        if new.admin.listen != started.admin.listen { keys.append("admin.listen") }
        if new.logging.output != started.logging.output { keys.append("logging.output") }
        return keys
    }

    /// The served certificate and key files: their paths and FNV-1a 128 over their bytes (nil when they cannot be
    /// read).
    struct TLSFiles: Equatable {
        let certificate: String
        let privateKey: String
        let contents: UInt128?

        init?(_ config: GatewayConfig) {
            guard let tls = config.server.tls else { return nil }
            certificate = tls.certificate
            privateKey = tls.privateKey
            guard let certificateBytes = FileManager.default.contents(atPath: tls.certificate),
                let keyBytes = FileManager.default.contents(atPath: tls.privateKey)
            else {
                contents = nil
                return
            }
            var hasher = FNV1a128()
            hasher.bytes(certificateBytes)
            hasher.byte(0)
            hasher.bytes(keyBytes)
            contents = hasher.value
        }
    }

    private static func socketAddress(_ address: ListenAddress) throws -> SocketAddress {
        guard
            let socket = SocketAddress(
                numericHost: address.host == "localhost" ? "127.0.0.1" : address.host, port: address.port)
        else {
            throw GatewayStartError("cannot listen on \(address): not a numeric IPv4/IPv6 address")
        }
        return socket
    }

    /// Binds the listeners and starts serving. `/readyz` turns 200 (and `listening` is logged) only with
    /// ``announceReady()``, which the command calls once its signal handlers are in place: a SIGTERM or SIGHUP sent as
    /// soon as the gateway reports ready must reach them, not the signal's default action.
    package func start() async throws {
        try await adminServer.start()
        try await server.start()
    }

    /// Turns `/readyz` to 200 and logs the listening addresses.
    package func announceReady() {
        admin.setReady(true)
        logger.info(
            "listening",
            metadata: [
                "listen": .array(server.localAddresses.map { .string($0.description) }),
                "tls_listen": .array(server.tlsLocalAddresses.map { .string($0.description) }),
                "admin": .array(adminServer.localAddresses.map { .string($0.description) }),
                "io_uring": .stringConvertible(group.loops.allSatisfy(\.sendsInBatches))
            ])
    }

    /// The bound main listener addresses.
    package var localAddresses: [SocketAddress] { server.localAddresses }
    package var adminAddresses: [SocketAddress] { adminServer.localAddresses }

    /// Swaps in a new configuration (routes, upstreams, plugins) atomically and applies its logging settings and server
    /// limits; the settings in ``keysNeedingRestart(from:to:)`` change only with a restart, which is logged as a warning.
    ///
    /// When the TLS certificate or key changed (other paths, or the files replaced in place), they are loaded first:
    /// new handshakes use them, open connections keep theirs. A pair that does not load rejects the whole reload
    /// (``reloadRejected(problems:)``, with OpenSSL's reason), and the running configuration and certificate stay.
    /// - Returns: whether the configuration was taken.
    @discardableResult
    package func reload(with config: GatewayConfig) -> Bool {
        reloading.withLock { _ in apply(config) }
    }

    private func apply(_ config: GatewayConfig) -> Bool {
        let needRestart = Self.keysNeedingRestart(from: startedConfig, to: config)
        let tlsFiles = TLSFiles(config)
        var reloadedTLS = false
        if let tls = config.server.tls, startedConfig.server.tls != nil, !needRestart.contains("server.tls"),
            tlsFiles != servedTLSFiles.withLock({ $0 })
        {
            do {
                try server.update(
                    tls: TLSServerConfiguration(
                        defaultCertificate: TLSCertificateFiles(
                            certificateChainPath: tls.certificate, privateKeyPath: tls.privateKey)))
                servedTLSFiles.withLock { $0 = tlsFiles }
                reloadedTLS = true
            } catch {
                let reason = (error as? TLSError)?.reason ?? "\(error)"
                reloadRejected(problems: ["\(config.sourcePath): server.tls.certificate: \(reason)"])
                return false
            }
        }
        if !needRestart.isEmpty {
            logger.warning(
                "reload: these settings take effect only after a restart",
                metadata: [
                    "keys": .array(needRestart.map { .string($0) })
                ])
        }
        logSettings.update(config.logging)
        buffering.update(config.server.buffering)
        server.update(limits: Self.serverLimits(config))
        state.replace(
            with: GatewaySnapshot(
                config: config, group: group, telemetry: telemetry, logger: logger,
                previous: state.current))
        telemetry.reloaded(successfully: true)
        if reloadedTLS, let tls = config.server.tls {
            logger.notice(
                "reloaded the TLS certificate: new handshakes use it",
                metadata: [
                    "certificate": .string(tls.certificate)
                ])
        }
        logger.notice(
            "reloaded", metadata: ["routes": "\(config.routes.count)", "upstreams": "\(config.upstreams.count)"])
        return true
    }

    /// Opens `logging.output`'s file again (SIGUSR1, and before each reload), so that a log rotated by moving the file
    /// (logrotate's default `create` mode) goes on in a new file at the same path. Lines logged before go to the old
    /// file, none is lost; a path that cannot be opened leaves the lines going to the old file, and says so there.
    /// Nothing happens with stdout or stderr.
    package func reopenLogFile() async {
        guard let path = telemetry.sink.filePath else { return }
        do {
            try await telemetry.sink.reopen()
            logger.notice("reopened the log file", metadata: ["path": .string(path)])
        } catch {
            logger.error(
                "cannot reopen the log file; still writing to the one open before",
                metadata: [
                    "path": .string(path), "reason": .string(error.reason)
                ])
        }
    }

    /// A reload whose configuration was rejected: the running one stays; logged with the problems and counted
    /// (`moya_gateway_config_reloads_total{result="failure"}`, `moya_gateway_config_last_reload_successful` 0).
    package func reloadRejected(problems: [String]) {
        telemetry.reloaded(successfully: false)
        logger.error(
            "reload rejected; keeping the running configuration",
            metadata: ["problems": .array(problems.map { .string($0) })])
    }

    /// Drains: `/readyz` turns 503, WebSocket tunnels get their Close, listeners close, in-flight requests finish (up
    /// to the drain timeout), then the admin listener closes.
    package func drain() async {
        admin.setReady(false)
        let tunnels = gatewayHandler.goAwayTunnels()
        logger.notice(
            "draining",
            metadata: [
                "timeout_ms": "\(Int(state.current.config.server.limits.drainTimeout.seconds * 1000))",
                "websocket_tunnels": "\(tunnels)"
            ])
        await server.shutdown(timeout: state.current.config.server.limits.drainTimeout)
        await gatewayHandler.waitUntilIdle(timeout: .seconds(1))
        await adminServer.shutdown(timeout: .seconds(1))
        logger.notice("drained")
        // Bounded: with an output nobody reads, the last lines are given up rather than the exit (stderr may be the
        // same blocked pipe, so nothing is written about it).
        telemetry.sink.flush(timeout: .seconds(2))
    }
}

/// A start-up failure with a readable reason.
package struct GatewayStartError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

extension LoggingConfig.Output {
    var sinkDestination: LogSink.Destination {
        switch self {
        case .stdout: return .stdout
        case .stderr: return .stderr
        case .file(let path): return .file(path)
        }
    }
}
