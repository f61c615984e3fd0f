import Foundation
import HTTPClientCore
import HTTPServerCore
import HTTPWire
import Moya
import NetCore
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Recording (`moya-gateway record`): a proxied exchange handed to the recorder.
extension GatewayHandler {
    /// Hands a proxied exchange's answer to the recorder: a complete answer is recorded (see ``ExchangeRecorder``),
    /// anything else counted.
    func record(
        _ result: Result<Moya.Response, MoyaError>, into recorder: ExchangeRecorder, call: Call,
        request: borrowing HTTPServerRequest, exchange: Exchange
    ) {
        guard let response = (try? result.get()) ?? result.failureResponse, let headers = response.transportHeaders
        else {
            return recorder.skip(.failed)
        }
        if let streamed = response.streamedBody {
            // Longer than the per-body cap: relayed to the client as it arrives, not recorded.
            _ = streamed
            return recorder.skip(.streamed)
        }
        let config = exchange.snapshot.config
        let upstream = call.upstream.upstream
        var secrets: [String] = []
        if let token = upstream.accessToken {
            secrets += [token.token.value, token.authorizationValue]
        }
        if let credentials = upstream.credentials {
            secrets += [
                credentials.password.value,
                Data("\(credentials.user):\(credentials.password.value)".utf8).base64EncodedString()
            ]
        }
        // Configured headers that carry a credential (by their name: a key, a token, a secret...).
        for field in upstream.headers where Self.namesCredential(field.name) { secrets.append(field.value) }
        let apiKeyHeader = config.clients?.apiKeys?.header
        let identity = ExchangeRecorder.identityNames(
            apiKeyHeader: apiKeyHeader, redacted: config.logging.redactHeaders)
        for field in request.head.headers where identity.contains(field.name) {
            secrets.append(field.value)
            secrets += Self.cookieValues(field.value)
        }
        for field in headers where field.name.equalsIgnoringASCIICase("Set-Cookie") || identity.contains(field.name) {
            secrets.append(field.value)
            secrets += Self.cookieValues(String(field.value.split(separator: ";").first ?? ""))
        }
        for key in config.clients?.apiKeys?.keys ?? [] { secrets.append(key.key.value) }
        recorder.observe(
            upstream: upstream.name, basePath: upstream.baseURL?.basePath ?? "",
            method: request.head.method.rawValue, target: call.upstreamPath,
            requestHeaders: request.head.headers, varyNames: call.route.config.coalesceVary,
            identityNames: identity, status: response.statusCode, responseHeaders: headers,
            body: response.transportBody ?? Array(response.data),
            duration: Self.upstreamTime(response, since: exchange.started), secrets: secrets,
            logger: exchange.snapshot.logger)
    }

    /// How long the upstream took to answer, in seconds, as a stub should take to: the client's time from sending to
    /// the end of the body, without opening a connection (a replay opens none); else the time since the request came.
    static func upstreamTime(_ response: Moya.Response, since started: ContinuousClock.Instant) -> Double {
        guard let timings = response.timings, timings.total > .zero else {
            return (ContinuousClock.now - started).seconds
        }
        return max(timings.total - (timings.connect ?? .zero), .zero).seconds
    }

    /// Whether a header's name says it carries a credential (`X-Upstream-Key`, `X-Auth-Token`, `X-Client-Secret`).
    static func namesCredential(_ name: String) -> Bool {
        let lower = name.lowercased()
        return ["key", "token", "auth", "secret", "pass", "session", "cookie", "signature", "credential"]
            .contains { lower.contains($0) }
    }

    /// The values of a `Cookie` (or a `Set-Cookie`'s first pair): `a=1; b=2` gives `1` and `2`.
    static func cookieValues(_ header: String) -> [String] {
        header.split(separator: ";").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? String(parts[1]).trimmingSpaces() : nil
        }
    }
}
