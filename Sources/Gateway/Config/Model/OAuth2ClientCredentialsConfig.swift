/// `upstreams.NAME.access_token` with `type: oauth2_client_credentials`: the gateway obtains the upstream's bearer
/// tokens itself, from an OAuth 2.0 token endpoint (the client-credentials grant, RFC 6749 §4.4), through Moya's
/// `OAuth2ClientCredentialsTokenSource`.
package struct OAuth2ClientCredentialsConfig: Sendable, Equatable {
    /// How the gateway authenticates to the token endpoint.
    package enum AuthMethod: String, Sendable, Equatable {
        /// `Authorization: Basic` (`client_secret_basic`).
        case basic
        /// In the form body (`client_secret_post`).
        case post
    }

    /// The token endpoint: `https`, or `http` to a loopback address only.
    package var tokenURL: UpstreamURL
    package var clientID: String
    package var clientSecret: Secret
    /// Space-separated scopes; nil sends none.
    package var scope: String?
    /// The `audience` parameter; nil sends none.
    package var audience: String?
    /// Default `.basic`.
    package var authMethod: AuthMethod = .basic
    /// Bounds each request to the token endpoint. Default 10 s.
    package var timeout: Duration = .seconds(10)
    /// The lifetime assumed when an answer has no `expires_in`. Default 5 min.
    package var defaultLifetime: Duration = .seconds(300)
    /// How long before expiry the token is renewed in the background (at most half its lifetime). Default 60 s.
    package var renewBefore: Duration = .seconds(60)
    /// Verification of the token endpoint's certificate, as an upstream's `tls`.
    package var tls = UpstreamConfig.TLS()

    package init(tokenURL: UpstreamURL, clientID: String, clientSecret: Secret) {
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.clientSecret = clientSecret
    }

    /// The token endpoint's URL as requested (`https://auth.example.com/oauth2/token`).
    package var tokenURLString: String { tokenURL.origin + (tokenURL.basePath.isEmpty ? "/" : tokenURL.basePath) }

    /// Whether `host` is a loopback address or `localhost`, where plain `http` to a token endpoint is allowed.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && (Int(part) ?? 256) <= 255
            }
    }
}
