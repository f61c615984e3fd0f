import HTTPWire

/// `upstreams`: each upstream's base URL, servers, headers, timeouts, pool, TLS, access token or credentials,
/// circuit breaker, health check and validation (its `stub` in ConfigLoader+Stubs, its `health_check` in
/// ConfigLoader+HealthCheck, an OAuth2 `access_token` in ConfigLoader+OAuth2).
extension Builder {
    func upstreams(_ entry: YAMLReader.Entry) -> [UpstreamConfig] {
        guard let map = reader.mapping(entry.value, entry.path, allowed: nil) else { return [] }
        var result: [UpstreamConfig] = []
        for item in map.items {
            guard Builder.isName(item.key) else {
                reader.report(
                    line: item.keyLine, item.path, "invalid upstream name (use letters, digits, '.', '-', '_')")
                continue
            }
            if let upstream = upstream(item) { result.append(upstream) }
        }
        return result
    }

    static func isName(_ name: String) -> Bool {
        !name.isEmpty
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") }
    }

    func upstream(_ entry: YAMLReader.Entry) -> UpstreamConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "base_url", "servers", "headers", "timeout", "pool", "tls", "access_token", "credentials",
                    "validation",
                    "stub", "circuit_breaker", "health_check"
                ])
        else { return nil }
        var upstream = UpstreamConfig(name: entry.key)
        var ok = true
        if let item = map["stub"] {
            if let stub = stub(item) { upstream.stub = stub } else { ok = false }
        }
        if let item = map["base_url"] {
            if let url = baseURL(item) { upstream.baseURL = url } else { ok = false }
        } else if upstream.stub == nil && !map.has("stub") {
            reader.report(
                line: map.line, YAMLReader.join(entry.path, "base_url"),
                "required key is missing (or configure a stub)")
            ok = false
        }
        if let item = map["servers"] {
            if map.has("stub") {
                reader.report(line: item.keyLine, item.path, "a stub upstream has no servers (use them with base_url)")
            } else if let servers = addressList(
                item, kind: "server", forms: "host:port or [IPv6]:port",
                parse: UpstreamServer.parse)
            {
                upstream.servers = servers
            } else {
                ok = false
            }
        }
        if let item = map["headers"] {
            if let headers = headers(item) { upstream.headers = headers } else { ok = false }
        }
        if let item = map["timeout"] { timeout(item, into: &upstream.timeout) }
        if let item = map["pool"] { pool(item, into: &upstream.pool) }
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
            if let breaker = circuitBreaker(item) { upstream.circuitBreaker = breaker }
        }
        if let item = map["health_check"] {
            if map.has("stub") {
                reader.report(
                    line: item.keyLine, item.path, "a stub upstream has no servers to check (use it with base_url)")
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
                reader.report(
                    line: value.line, item.path,
                    "invalid value \(value.shown) (none, success or success_and_redirect)")
            }
        }
        return ok ? upstream : nil
    }

    /// `timeout`: `connect` and `response`.
    func timeout(_ entry: YAMLReader.Entry, into timeout: inout UpstreamConfig.Timeout) {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["connect", "response"]) else { return }
        if let connect = map["connect"], let value = reader.duration(connect) { timeout.connect = value }
        if let response = map["response"], let value = reader.duration(response) { timeout.response = value }
    }

    /// `pool`: connections, HTTP/2, waiting, idle time, requests per connection, one caller's share.
    func pool(_ entry: YAMLReader.Entry, into settings: inout UpstreamConfig.Pool) {
        guard
            let pool = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "max_connections", "http2", "max_wait", "max_waiting", "idle_timeout",
                    "max_requests_per_connection",
                    "max_share"
                ])
        else { return }
        if let max = pool["max_connections"], let value = reader.int(max, in: 1...100_000) {
            settings.maxConnections = value
        }
        if let wait = pool["max_wait"], let value = reader.duration(wait) { settings.maxWait = value }
        if let idle = pool["idle_timeout"], let value = reader.duration(idle) { settings.idleTimeout = value }
        if let waiting = pool["max_waiting"], let value = reader.int(waiting, in: 0...1_000_000) {
            settings.maxWaiting = value
        }
        if let cap = pool["max_requests_per_connection"], let value = reader.int(cap, in: 0...1_000_000_000) {
            settings.maxRequestsPerConnection = value
        }
        if let share = pool["max_share"], let value = BufferingConfigParser.maxShare(share, reader: reader) {
            settings.maxShare = value
        }
        if let mode = pool["http2"], let value = reader.scalar(mode.value, mode.path) {
            if let parsed = UpstreamConfig.HTTP2Mode(rawValue: value.text) {
                settings.http2 = parsed
            } else if value.text == "true" || value.text == "false" {
                settings.http2 = value.text == "true" ? .always : .never
            } else {
                reader.report(line: value.line, mode.path, "invalid value \(value.shown) (auto, always or never)")
            }
        }
    }

    /// `circuit_breaker`: the `failures` in a row that open it, and `open_for`.
    func circuitBreaker(_ entry: YAMLReader.Entry) -> CircuitBreakerConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["failures", "open_for"]) else { return nil }
        var breaker = CircuitBreakerConfig()
        if let failures = map["failures"], let value = reader.int(failures, in: 1...1_000_000) {
            breaker.failures = value
        }
        if let openFor = map["open_for"], let value = reader.duration(openFor) { breaker.openFor = value }
        return breaker
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

    /// A `headers` mapping (see ``headerList(_:)``).
    func headers(_ entry: YAMLReader.Entry) -> HTTPFields? {
        guard let list = headerList(entry) else { return nil }
        var headers = HTTPFields()
        for header in list { headers.add(name: header.name, value: header.value) }
        return headers
    }

    /// A `headers` mapping in order, each with where it was written; nil when a name or value is invalid.
    func headerList(_ entry: YAMLReader.Entry) -> [(name: String, value: String, source: Source)]? {
        guard let pairs = reader.stringMap(entry) else { return nil }
        var result: [(name: String, value: String, source: Source)] = []
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
            result.append((pair.key, pair.value.text, Source(line: pair.value.line, path: pair.path)))
        }
        return ok ? result : nil
    }

    func accessToken(_ entry: YAMLReader.Entry) -> UpstreamConfig.AccessToken? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["type", "token", "scheme"]) else {
            return nil
        }
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
                reader.report(
                    line: value.line, item.path,
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
}
