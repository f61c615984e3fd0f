import Foundation
import NetCore
import Yams

/// `access_token: { type: oauth2_client_credentials, ... }` and the CA bundles of upstreams and token endpoints.
extension ConfigLoader {
    /// The `type` that makes an `access_token` an OAuth 2.0 client-credentials one.
    static let oauth2Type = "oauth2_client_credentials"

    /// Whether the `access_token` mapping at `entry` says `type: oauth2_client_credentials`.
    static func declaresOAuth2(_ entry: YAMLReader.Entry) -> Bool {
        guard case .mapping(let mapping) = entry.value else { return false }
        for (key, value) in mapping where key.scalar?.string == "type" {
            return value.scalar?.string == oauth2Type
        }
        return false
    }

    /// Parses an OAuth 2.0 `access_token`; reports every problem and returns nil when there is one. `isStub`: the
    /// upstream is a stub, which sends nothing and so has no token to fetch.
    func oauth2(_ entry: YAMLReader.Entry, reader: YAMLReader, isStub: Bool) -> OAuth2ClientCredentialsConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "type", "token_url", "client_id", "client_secret", "scope", "audience", "auth_method", "timeout",
                    "default_lifetime", "renew_before", "tls"
                ])
        else { return nil }
        var ok = true
        if isStub {
            reader.report(
                line: entry.keyLine, entry.path,
                "a stub upstream sends nothing, so it has no token to fetch "
                    + "(use oauth2_client_credentials with base_url)")
            ok = false
        }
        var url: UpstreamURL?
        if let item = reader.requireKey(map, "token_url"), let value = reader.scalar(item.value, item.path) {
            switch UpstreamURLParser.parse(value.text) {
            case .success(let parsed):
                if parsed.scheme == "https" || OAuth2ClientCredentialsConfig.isLoopback(parsed.host) {
                    url = parsed
                } else {
                    reader.report(
                        line: value.line, item.path,
                        "must be https (plain http only to a loopback address: "
                            + "127.0.0.1, [::1] or localhost), since the client secret and the tokens travel on it")
                }
            case .failure(let error):
                reader.report(line: value.line, item.path, "invalid token_url: \(value.hidingReason(error.reason))")
            }
        }
        let clientID = reader.requireKey(map, "client_id").flatMap { text($0, reader: reader) }
        let secret = reader.requireKey(map, "client_secret").flatMap { reader.string($0) }
        // Every key is read (and its problems reported) before any is missing.
        let placeholder = UpstreamURL(scheme: "https", host: "", port: 443, basePath: "")
        var config = OAuth2ClientCredentialsConfig(
            tokenURL: url ?? placeholder, clientID: clientID ?? "",
            clientSecret: Secret(secret ?? ""))
        ok = ok && url != nil && clientID != nil && secret != nil
        if let item = map["scope"] {
            if let value = text(item, reader: reader) { config.scope = value } else { ok = false }
        }
        if let item = map["audience"] {
            if let value = text(item, reader: reader) { config.audience = value } else { ok = false }
        }
        if let item = map["auth_method"], let value = reader.scalar(item.value, item.path) {
            if let method = OAuth2ClientCredentialsConfig.AuthMethod(rawValue: value.text) {
                config.authMethod = method
            } else {
                reader.report(line: value.line, item.path, "invalid value \(value.shown) (basic or post)")
                ok = false
            }
        }
        if let item = map["timeout"] {
            if let value = reader.duration(item) { config.timeout = value } else { ok = false }
        }
        if let item = map["default_lifetime"] {
            if let value = reader.duration(item) { config.defaultLifetime = value } else { ok = false }
        }
        if let item = map["renew_before"] {
            if let value = reader.duration(item, allowZero: true) { config.renewBefore = value } else { ok = false }
        }
        if let item = map["tls"] {
            if let tls = upstreamTLS(item, reader: reader) { config.tls = tls } else { ok = false }
        }
        return ok ? config : nil
    }

    /// A `tls: { verify, ca_file }` mapping (an upstream's, or its token endpoint's).
    func upstreamTLS(_ entry: YAMLReader.Entry, reader: YAMLReader) -> UpstreamConfig.TLS? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["verify", "ca_file"]) else { return nil }
        var tls = UpstreamConfig.TLS()
        var ok = true
        if let verify = map["verify"] {
            if let value = reader.bool(verify) { tls.verify = value } else { ok = false }
        }
        if let ca = map["ca_file"] {
            if let file = caFile(ca, reader: reader) { tls.caFile = file } else { ok = false }
        }
        return ok ? tls : nil
    }

    /// A `ca_file`: it must exist and hold at least one certificate OpenSSL can load (as a reload would load it).
    func caFile(_ entry: YAMLReader.Entry, reader: YAMLReader) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        guard !value.text.isEmpty else {
            reader.report(line: value.line, entry.path, "must not be empty")
            return nil
        }
        let resolved = reader.resolve(value.text)
        guard fileExists(resolved) else {
            reader.report(
                line: value.line, entry.path,
                value.fromEnvironment
                    ? "file not found or not readable" : "file not found or not readable: \(resolved)")
            return nil
        }
        if let problem = checkCABundle(resolved) {
            reader.report(line: value.line, entry.path, problem)
            return nil
        }
        return resolved
    }

    /// A non-empty string without control characters.
    private func text(_ entry: YAMLReader.Entry, reader: YAMLReader) -> String? {
        guard let value = reader.string(entry) else { return nil }
        guard HeaderName.isValidValue(value) else {
            reader.report(line: reader.line(of: entry.value), entry.path, "contains control characters")
            return nil
        }
        return value
    }

    /// Loads the CA bundle at `path` as an HTTPS client would; its error, if any. A file that is not on disk is
    /// left to ``fileExists`` (tests check paths that exist only in memory).
    package static let caBundleProblemOnDisk: @Sendable (String) -> String? = { path in
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            _ = try TLSContext(client: TLSClientConfiguration(caFile: path))
            return nil
        } catch let error as TLSError {
            return error.reason
        } catch {
            return "\(error)"
        }
    }
}
