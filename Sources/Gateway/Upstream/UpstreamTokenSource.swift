import CoreMetrics
import Foundation
import HTTPClientCore
import Logging
import Moya
import NetCore
import Synchronization

/// An upstream's `access_token: { type: oauth2_client_credentials }`: Moya's `OAuth2ClientCredentialsTokenSource` on
/// an HTTP client of its own (the token endpoint's TLS settings), its fetches counted and logged per upstream.
///
/// A reload keeps it, and so its token, while its ``Identity`` is unchanged (the same endpoint, client, secret,
/// scope, settings and CA bundle contents); any change starts a new source, whose first request fetches a new
/// token. Nothing is fetched before a request needs a token: readiness never waits for the token endpoint.
final class UpstreamTokenSource: Sendable {
    /// What makes two sources interchangeable.
    struct Identity: Equatable {
        let config: OAuth2ClientCredentialsConfig
        /// The CA bundle's contents (a bundle replaced in place is a new identity).
        let caBundle: UInt128?

        init(_ config: OAuth2ClientCredentialsConfig) {
            self.config = config
            caBundle = config.tls.caFile.flatMap { path in
                FileManager.default.contents(atPath: path).map { data in
                    var hasher = FNV1a128()
                    hasher.bytes(data)
                    return hasher.value
                }
            }
        }
    }

    let identity: Identity
    let source: any AccessTokenSource
    private let client: HTTPClient

    init(
        upstream: String, config: OAuth2ClientCredentialsConfig, group: EventLoopGroup, telemetry: Telemetry,
        logger: Logger
    ) {
        identity = Identity(config)
        var configuration = HTTPClient.Configuration()
        configuration.connectTimeout = config.timeout
        configuration.responseTimeout = config.timeout
        configuration.maxConnectionsPerOrigin = 4
        configuration.maxResponseBodyBytes = 64 * 1024
        configuration.decompression = HTTPClient.Configuration.Decompression(maxBytes: 1 << 20)
        configuration.tls = TLSClientConfiguration(verifyPeer: config.tls.verify, caFile: config.tls.caFile)
        client = HTTPClient(configuration: configuration, group: group)
        let settings = OAuth2ClientCredentialsTokenSource.Configuration(
            tokenURL: config.tokenURLString, clientID: config.clientID, clientSecret: config.clientSecret.value,
            scope: config.scope, audience: config.audience,
            clientAuthentication: config.authMethod == .post ? .post : .basic, timeout: config.timeout,
            defaultLifetime: config.defaultLifetime, renewal: AccessTokenRenewalPolicy(renewBefore: config.renewBefore))
        let events = UpstreamTokenEvents(upstream: upstream, telemetry: telemetry, logger: logger)
        do {
            source = try OAuth2ClientCredentialsTokenSource(configuration: settings, client: client) {
                events.handle($0)
            }
        } catch {
            // The loader checked the URL; should it still be refused, every request fails rather than going unsigned.
            let reason = (error as? AccessTokenSourceError)?.reason ?? "the token endpoint cannot be used"
            source = RenewingAccessTokenSource { throw AccessTokenSourceError(reason, isTransient: false) }
        }
    }
}

/// Counts and logs what an upstream's token source does. Never logs a token or the secret: the events carry neither.
private final class UpstreamTokenEvents: Sendable {
    let upstream: String
    let telemetry: Telemetry
    let logger: Logger
    /// Whether the last fetch failed, so that the next success says the endpoint recovered.
    private let failing = Atomic<Bool>(false)

    init(upstream: String, telemetry: Telemetry, logger: Logger) {
        self.upstream = upstream
        self.telemetry = telemetry
        self.logger = logger
    }

    func handle(_ event: AccessTokenSourceEvent) {
        switch event {
        case .fetched(let lifetime):
            telemetry.tokenFetched(upstream: upstream, succeeded: true)
            let metadata: Logger.Metadata = [
                "upstream": .string(upstream),
                "expires_in_s": .string(lifetime.map { String(Int($0.components.seconds)) } ?? "none")
            ]
            if failing.exchange(false, ordering: .relaxed) {
                logger.notice("access token fetched again; the token endpoint recovered", metadata: metadata)
            } else {
                logger.info("access token fetched", metadata: metadata)
            }
        case .fetchFailed(let reason, let willRetry):
            telemetry.tokenFetched(upstream: upstream, succeeded: false)
            failing.store(true, ordering: .relaxed)
            logger.warning(
                "access token fetch failed",
                metadata: [
                    "upstream": .string(upstream), "reason": .string(reason),
                    "will_retry": .stringConvertible(willRetry)
                ])
        case .invalidated:
            logger.notice(
                "the upstream refused its access token (401); fetching a new one",
                metadata: [
                    "upstream": .string(upstream)
                ])
        }
    }
}

extension Telemetry {
    /// Counts a request to `upstream`'s token endpoint (`moya_gateway_upstream_token_fetches_total`).
    func tokenFetched(upstream: String, succeeded: Bool) {
        CoreMetrics.Counter(
            label: Metric.tokenFetches,
            dimensions: [("upstream", upstream), ("result", succeeded ? "success" : "failure")],
            factory: metricsFactory
        ).increment()
    }
}
