/// `upstreams.NAME.access_token` with `type: oauth2_client_credentials`: the gateway obtains the upstream's bearer
/// tokens itself, from an OAuth 2.0 token endpoint (the client-credentials grant, RFC 6749 §4.4), through Moya's
/// `OAuth2ClientCredentialsTokenSource`.
public struct OAuth2ClientCredentialsConfig: Sendable, Equatable {
    /// How the gateway authenticates to the token endpoint.
    public enum AuthMethod: String, Sendable, Equatable {
        /// `Authorization: Basic` (`client_secret_basic`).
        case basic
        /// In the form body (`client_secret_post`).
        case post
    }

    /// The token endpoint: `https`, or `http` to a loopback address only.
    public var tokenURL: UpstreamURL
    public var clientID: String
    public var clientSecret: Secret
    /// Space-separated scopes; nil sends none.
    public var scope: String?
    /// The `audience` parameter; nil sends none.
    public var audience: String?
    /// Default `.basic`.
    public var authMethod: AuthMethod = .basic
    /// Bounds each request to the token endpoint. Default 10 s.
    public var timeout: Duration = .seconds(10)
    /// The lifetime assumed when an answer has no `expires_in`. Default 5 min.
    public var defaultLifetime: Duration = .seconds(300)
    /// How long before expiry the token is renewed in the background (at most half its lifetime). Default 60 s.
    public var renewBefore: Duration = .seconds(60)
    /// Verification of the token endpoint's certificate, as an upstream's `tls`.
    public var tls = UpstreamConfig.TLS()

    public init(tokenURL: UpstreamURL, clientID: String, clientSecret: Secret) {
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.clientSecret = clientSecret
    }

    /// The token endpoint's URL as requested (`https://auth.example.com/oauth2/token`).
    public var tokenURLString: String { tokenURL.origin + (tokenURL.basePath.isEmpty ? "/" : tokenURL.basePath) }

    /// Whether `host` is a loopback address or `localhost`, where plain `http` to a token endpoint is allowed.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && (Int(part) ?? 256) <= 255
        }
    }
}
