import Foundation
import HTTPClientCore
import HTTPWire

/// An ``AccessTokenSource`` that obtains tokens with the OAuth 2.0 client-credentials grant (RFC 6749 §4.4): a `POST`
/// of `grant_type=client_credentials` (with `scope` and `audience` when given) to the token endpoint, the client
/// authenticated with HTTP Basic (`client_secret_basic`, the default) or in the form body (`client_secret_post`). The
/// answer's `access_token` is used until `expires_in` (or ``Configuration/defaultLifetime`` when the answer has
/// none) runs out, renewed before that as ``RenewingAccessTokenSource`` does: one fetch at a time, proactive renewal,
/// bounded retries with backoff, recovery by itself.
///
/// ```swift
/// let source = try OAuth2ClientCredentialsTokenSource(configuration: .init(
///     tokenURL: "https://auth.example.com/oauth2/token", clientID: "reports", clientSecret: secret,
///     scope: "reports.read"))
/// let provider = MoyaProvider<ReportsAPI>(plugins: [AccessTokenSourcePlugin(source: source)])
/// ```
///
/// Neither the client secret nor a token appears in an error's reason, an event or a description.
public final class OAuth2ClientCredentialsTokenSource: AccessTokenSource {
    /// How the client authenticates to the token endpoint.
    public enum ClientAuthentication: String, Sendable, Hashable {
        /// `Authorization: Basic` with the form-encoded id and secret (RFC 6749 §2.3.1, `client_secret_basic`).
        case basic
        /// `client_id` and `client_secret` in the form body (`client_secret_post`).
        case post
    }

    /// What the source asks the token endpoint for, and how.
    public struct Configuration: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// The token endpoint, an absolute `https` URL (`http` works too: keep it to a loopback address).
        public var tokenURL: String
        /// The client's id (`client_id`), as the authorization server registered it.
        public var clientID: String
        /// Never shown by ``description``.
        public var clientSecret: String
        /// Space-separated scopes; nil sends none.
        public var scope: String?
        /// The `audience` parameter (Auth0, Okta and others ask for it); nil sends none.
        public var audience: String?
        /// How the client authenticates to the token endpoint; ``ClientAuthentication/basic`` by default.
        public var clientAuthentication: ClientAuthentication
        /// Bounds each fetch attempt (connect, request and answer).
        public var timeout: Duration
        /// The lifetime assumed when the answer has no `expires_in`.
        public var defaultLifetime: Duration
        /// When the token is renewed and how a failing fetch is retried.
        public var renewal: AccessTokenRenewalPolicy

        /// Creates a configuration.
        /// - Parameters:
        ///   - tokenURL: the token endpoint, an absolute `https` URL (`http` works too: keep it to a loopback
        ///     address, since the secret and the tokens travel on it). The source's initializer checks it.
        ///   - clientID: the client's id.
        ///   - clientSecret: the client's secret; never shown by ``description``.
        ///   - scope: space-separated scopes to ask for; `nil` (the default) sends none.
        ///   - audience: the `audience` parameter; `nil` (the default) sends none.
        ///   - clientAuthentication: how the client authenticates; ``ClientAuthentication/basic`` by default.
        ///   - timeout: bounds each fetch attempt (connect, request and answer); 10 s by default.
        ///   - defaultLifetime: the lifetime assumed when an answer has no `expires_in`; 5 minutes by default.
        ///   - renewal: when the token is renewed and how a failing fetch is retried; the policy's defaults by default.
        public init(
            tokenURL: String, clientID: String, clientSecret: String, scope: String? = nil,
            audience: String? = nil, clientAuthentication: ClientAuthentication = .basic,
            timeout: Duration = .seconds(10), defaultLifetime: Duration = .seconds(300),
            renewal: AccessTokenRenewalPolicy = AccessTokenRenewalPolicy()
        ) {
            self.tokenURL = tokenURL
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.scope = scope
            self.audience = audience
            self.clientAuthentication = clientAuthentication
            self.timeout = timeout
            self.defaultLifetime = defaultLifetime
            self.renewal = renewal
        }

        /// The endpoint, the client id and the authentication method; the secret as `[REDACTED]`.
        public var description: String {
            "OAuth2 client credentials (\(tokenURL), client \(clientID), secret [REDACTED], "
                + "\(clientAuthentication.rawValue))"
        }
        /// The same as ``description``: never shows the secret.
        public var debugDescription: String { description }
    }

    /// What the source asks the token endpoint for, and how (as it was created with).
    public let configuration: Configuration
    private let renewing: RenewingAccessTokenSource

    /// Creates a token source that fetches its tokens through `session`.
    ///
    /// - Parameters:
    ///   - configuration: The token endpoint and the client's credentials.
    ///   - session: The session whose HTTP client the token requests go through; ``Session/default`` by default.
    ///   - onEvent: Told of every fetch and invalidation (see ``AccessTokenSourceEvent``).
    /// - Throws: ``AccessTokenSourceError`` when `tokenURL` is not an absolute `http` or `https` URL.
    public convenience init(
        configuration: Configuration, session: Session = .default,
        onEvent: RenewingAccessTokenSource.EventHandler? = nil
    ) throws {
        try self.init(configuration: configuration, client: session.client, onEvent: onEvent)
    }

    /// Creates a token source on `client` (the gateway's client for the token endpoint, whose TLS settings verify
    /// it).
    /// - Parameters:
    ///   - configuration: the token endpoint and the client's credentials.
    ///   - client: the HTTP client the token requests go through.
    ///   - onEvent: told of every fetch and invalidation (see ``AccessTokenSourceEvent``).
    /// - Throws: ``AccessTokenSourceError`` when `tokenURL` is not an absolute `http` or `https` URL.
    package init(
        configuration: Configuration, client: HTTPClient,
        onEvent: RenewingAccessTokenSource.EventHandler? = nil
    ) throws {
        guard let url = try? HTTPURL(parsing: configuration.tokenURL) else {
            throw AccessTokenSourceError("the token URL is not an absolute http or https URL", isTransient: false)
        }
        self.configuration = configuration
        let request = Self.request(configuration, url: url)
        let timeout = configuration.timeout
        let defaultLifetime = configuration.defaultLifetime
        renewing = RenewingAccessTokenSource(policy: configuration.renewal, onEvent: onEvent) {
            try await Self.fetch(request, client: client, timeout: timeout, defaultLifetime: defaultLifetime)
        }
    }

    /// A token to send now: the current one while it is valid, else the one being fetched from the token endpoint
    /// (waiting for it), as ``RenewingAccessTokenSource/token(before:)`` gives it.
    /// - Parameter deadline: the latest the caller waits; `nil` (the default): no limit.
    /// - Returns: the `access_token` of the endpoint's last answer.
    /// - Throws: ``AccessTokenSourceError`` when no token can be had (the endpoint failed, answered something that
    ///   is not a token, or not before `deadline`), `CancellationError` when the calling task is cancelled.
    public func token(before deadline: ContinuousClock.Instant? = nil) async throws -> String {
        try await renewing.token(before: deadline)
    }

    /// Drops `token` if it is still the current one, so that the next ``token(before:)`` fetches another.
    /// - Parameter token: the token a refused request carried (an upstream answered `401` to it).
    public func invalidate(_ token: String) {
        renewing.invalidate(token)
    }

    /// How many requests were made to the token endpoint.
    public var fetchCount: Int { renewing.fetchCount }

    /// Whether a token is held that has not expired.
    public var hasValidToken: Bool { renewing.hasValidToken }

    // MARK: The token request

    /// The token request, made once: its form and headers do not change.
    static func request(_ configuration: Configuration, url: HTTPURL) -> HTTPClientRequest {
        var fields = [("grant_type", "client_credentials")]
        if let scope = configuration.scope { fields.append(("scope", scope)) }
        if let audience = configuration.audience { fields.append(("audience", audience)) }
        var headers = HTTPFields()
        headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        headers.add(name: "Accept", value: "application/json")
        switch configuration.clientAuthentication {
        case .basic:
            let credentials = formEncoded(configuration.clientID) + ":" + formEncoded(configuration.clientSecret)
            headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        case .post:
            fields.append(("client_id", configuration.clientID))
            fields.append(("client_secret", configuration.clientSecret))
        }
        let body = fields.map { formEncoded($0.0) + "=" + formEncoded($0.1) }.joined(separator: "&")
        return HTTPClientRequest(
            method: .post, origin: HTTPOrigin(scheme: url.scheme, host: url.host, port: url.port),
            target: url.target, headers: headers, body: .bytes(Array(body.utf8)))
    }

    /// `application/x-www-form-urlencoded`: unreserved characters as they are, space as `+`, the rest `%XX` of UTF-8.
    static func formEncoded(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "):
                output += "+"
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                output.unicodeScalars.append("%")
                output.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                output.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return output
    }

    static func fetch(
        _ request: HTTPClientRequest, client: HTTPClient, timeout: Duration,
        defaultLifetime: Duration
    ) async throws -> AccessTokenGrant {
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: timeout)
        } catch let error as HTTPClientError {
            if case .invalidURL = error {
                throw AccessTokenSourceError("the token URL cannot be requested", isTransient: false)
            }
            throw AccessTokenSourceError("token endpoint: \(error.description)")
        }
        return try grant(status: response.status, body: response.body, defaultLifetime: defaultLifetime)
    }

    /// The grant in a token endpoint's answer, or why there is none (never quoting the answer, which may hold a
    /// token).
    static func grant(status: Int, body: [UInt8], defaultLifetime: Duration) throws -> AccessTokenGrant {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        guard (200...299).contains(status) else {
            var reason = "token endpoint answered \(status)"
            // RFC 6749 §5.2: `error` is a short ASCII code (`invalid_client`); anything else is not repeated.
            if let code = object?["error"] as? String, (1...64).contains(code.utf8.count),
                code.utf8.allSatisfy({
                    $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                        || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                })
            {
                reason += " (\(code))"
            }
            throw AccessTokenSourceError(reason, isTransient: status >= 500 || status == 429 || status == 408)
        }
        guard let object else { throw AccessTokenSourceError("the token endpoint's answer is not a JSON object") }
        guard let token = object["access_token"] as? String, !token.isEmpty else {
            throw AccessTokenSourceError("the token endpoint's answer has no access_token")
        }
        if let type = object["token_type"] {
            guard let text = type as? String, text.lowercased() == "bearer" else {
                throw AccessTokenSourceError(
                    "the token endpoint's answer has a token_type other than Bearer",
                    isTransient: false)
            }
        }
        var lifetime = defaultLifetime
        if let expiresIn = object["expires_in"] {
            let seconds: Double?
            if let number = expiresIn as? NSNumber, !(expiresIn is Bool) {
                seconds = number.doubleValue
            } else if let text = expiresIn as? String {
                seconds = Double(text.trimmingCharacters(in: .whitespaces))
            } else {
                seconds = nil
            }
            guard let seconds, seconds.isFinite, seconds > 0 else {
                throw AccessTokenSourceError(
                    "the token endpoint's answer has an expires_in that is not a positive number")
            }
            lifetime = .milliseconds(Int64(min(seconds, 10 * 365 * 86400) * 1000))
        }
        return AccessTokenGrant(token: token, lifetime: lifetime)
    }
}
