import HTTPClientCore
import HTTPWire
import Locking
import Logging
import NetCore

/// The active health checks of one upstream (`health_check`): every `interval`, each of its addresses (its `servers`,
/// or its host name's addresses) gets a GET of `path`, on a connection of the checker's own. An address that fails
/// `unhealthy_after` probes in a row (no answer within `timeout`, or a status outside 200–399) is taken out of the
/// upstream's clients (``HTTPClient/exclude(_:)``) until it passes `healthy_after` in a row; when every address is
/// out, all of them are used. Addresses start healthy, except those a reload's previous checker of the same upstream
/// had taken out (``excluded``). Transitions are logged and exported as `moya_gateway_upstream_server_healthy`.
///
/// The checks run in a task the checker owns: they stop when the checker goes (its upstream was replaced by a
/// reload, or the gateway stops).
final class UpstreamHealthChecker: Sendable {
    private let task: Task<Void, Never>
    private let exclusions: Exclusions

    /// `inherited`: addresses taken out by the checker this one replaces; they stay out until they pass.
    init(
        upstream: UpstreamConfig, check: HealthCheckConfig, clients: [HTTPClient], group: EventLoopGroup,
        telemetry: Telemetry, logger: Logger, inherited: Set<SocketAddress> = []
    ) {
        let probes = ProbeSettings(upstream: upstream, check: check)
        let exclusions = Exclusions(inherited)
        self.exclusions = exclusions
        for client in clients { client.exclude(inherited) }
        task = Task {
            await Self.run(
                probes, check: check, clients: clients, group: group, telemetry: telemetry, logger: logger,
                exclusions: exclusions)
        }
    }

    /// The addresses taken out now.
    var excluded: Set<SocketAddress> { exclusions.current }

    /// The addresses taken out, shared by the checker and its task.
    private final class Exclusions: Sendable {
        private let addresses: Locked<Set<SocketAddress>>
        init(_ addresses: Set<SocketAddress>) { self.addresses = Locked(addresses) }
        var current: Set<SocketAddress> {
            get { addresses.withLock { $0 } }
            set { addresses.withLock { $0 = newValue } }
        }
    }

    deinit { task.cancel() }

    /// What a probe needs of the upstream's configuration, copied once.
    private struct ProbeSettings: Sendable {
        let name: String
        let origin: HTTPOrigin
        let path: String
        let headers: HTTPFields
        let configuration: HTTPClient.Configuration

        init(upstream: UpstreamConfig, check: HealthCheckConfig) {
            name = upstream.name
            origin =
                upstream.baseURL.map { HTTPOrigin(scheme: $0.scheme.lowercased(), host: $0.host, port: $0.port) }
                ?? HTTPOrigin(scheme: "http", host: "invalid", port: 80)
            path = check.path
            var headers = upstream.headers
            headers.replaceOrAdd(name: "User-Agent", value: "moya-gateway-health-check")
            headers.replaceOrAdd(check.headers)
            self.headers = headers
            var configuration = HTTPClient.Configuration()
            configuration.connectTimeout = check.timeout
            configuration.responseTimeout = check.timeout
            configuration.maxConnectionsPerOrigin = 1
            configuration.maxResponseBodyBytes = 64 * 1024
            configuration.http2 = HTTPClient.Configuration.HTTP2Mode(rawValue: upstream.pool.http2.rawValue) ?? .auto
            configuration.tls = TLSClientConfiguration(verifyPeer: upstream.tls.verify, caFile: upstream.tls.caFile)
            self.configuration = configuration
        }
    }

    /// One address's record of probes.
    private struct AddressHealth {
        var healthy = true
        var failures = 0
        var passes = 0
    }

    private static func run(
        _ settings: ProbeSettings, check: HealthCheckConfig, clients: [HTTPClient],
        group: EventLoopGroup, telemetry: Telemetry, logger: Logger,
        exclusions: Exclusions
    ) async {
        guard let addressSource = clients.first else { return }
        var probeClients: [SocketAddress: HTTPClient] = [:]
        var health: [SocketAddress: AddressHealth] = [:]
        for address in exclusions.current { health[address] = AddressHealth(healthy: false) }
        while !Task.isCancelled {
            let addresses = (try? await addressSource.addresses(for: settings.origin)) ?? Array(health.keys)
            for gone in health.keys where !addresses.contains(gone) {
                health[gone] = nil
                probeClients[gone]?.shutdown()
                probeClients[gone] = nil
            }
            var round: [(SocketAddress, HTTPClient)] = []
            for address in addresses {
                if probeClients[address] == nil {
                    var configuration = settings.configuration
                    configuration.servers = [.init(host: address.host, port: address.port)]
                    probeClients[address] = HTTPClient(configuration: configuration, group: group)
                }
                if let client = probeClients[address] { round.append((address, client)) }
            }
            let results = await withTaskGroup(of: (SocketAddress, String?).self) { group in
                for (address, client) in round {
                    group.addTask { (address, await probe(settings, with: client, timeout: check.timeout)) }
                }
                var results: [(SocketAddress, String?)] = []
                for await result in group { results.append(result) }
                return results
            }
            guard !Task.isCancelled else { break }
            for (address, failure) in results {
                var record = health[address] ?? AddressHealth()
                let wasHealthy = record.healthy
                if let failure {
                    record.failures += 1
                    record.passes = 0
                    if record.healthy && record.failures >= check.unhealthyAfter {
                        record.healthy = false
                        logger.warning(
                            "upstream server failed its health checks, taken out",
                            metadata: [
                                "upstream": "\(settings.name)", "server": "\(address)", "reason": "\(failure)"
                            ])
                    }
                } else {
                    record.passes += 1
                    record.failures = 0
                    if !record.healthy && record.passes >= check.healthyAfter {
                        record.healthy = true
                        logger.notice(
                            "upstream server passes its health checks again",
                            metadata: [
                                "upstream": "\(settings.name)", "server": "\(address)"
                            ])
                    }
                }
                if health[address] == nil || record.healthy != wasHealthy {
                    telemetry.serverHealth(
                        upstream: settings.name, server: address.description, healthy: record.healthy)
                }
                health[address] = record
            }
            let excluded = Set(health.filter { !$0.value.healthy }.keys)
            exclusions.current = excluded
            for client in clients { client.exclude(excluded) }
            try? await Task.sleep(for: check.interval)
        }
        for client in probeClients.values { client.shutdown() }
    }

    /// Why the probe of one address failed, or nil when it passed (a status in 200–399 within the timeout).
    private static func probe(_ settings: ProbeSettings, with client: HTTPClient, timeout: Duration) async -> String? {
        let request = HTTPClientRequest(
            method: .get, origin: settings.origin, target: settings.path,
            headers: settings.headers)
        do {
            let response = try await client.execute(request, timeout: timeout)
            return (200..<400).contains(response.status) ? nil : "status \(response.status)"
        } catch let error as HTTPClientError {
            return error.description
        } catch {
            return "\(type(of: error))"
        }
    }
}
