import HTTPWire

/// `routes`: each route's name, upstream and options (rewrite, coalescing, WebSockets, clients, timeout, retries,
/// rate limit, body limit, buffering), and the check that no route shadows an earlier one. The `match` is read in
/// ConfigLoader+RouteMatch.
extension Builder {
    func routes(
        _ entry: YAMLReader.Entry, declaredUpstreams: [String], stubUpstreams: Set<String>,
        clients: ClientsConfig?
    ) -> [RouteConfig] {
        guard case .sequence(let sequence) = entry.value else {
            reader.report(
                line: reader.line(of: entry.value), entry.path,
                "expected a list, got \(YAMLReader.kindName(entry.value))")
            return []
        }
        var result: [RouteConfig] = []
        var seenNames: [String: Int] = [:]
        /// How messages name each route: its name, or a neutral phrase when the name came from the environment.
        var shownNames: [Int: String] = [:]
        var matchesSeen: [(index: Int, route: RouteConfig)] = []
        for (index, node) in sequence.enumerated() {
            let path = "\(entry.path)[\(index)]"
            guard
                let map = reader.mapping(
                    node, path,
                    allowed: [
                        "name", "match", "upstream", "rewrite", "coalesce", "coalesce_vary", "clients", "timeout",
                        "retries",
                        "rate_limit", "websocket", "max_body_bytes", "buffering"
                    ])
            else { continue }
            let nameEntry = reader.requireKey(map, "name")
            let nameValue = nameEntry.flatMap { reader.nonEmptyScalar($0) }
            let name = nameValue?.text
            if let nameValue { shownNames[index] = nameValue.shown }
            if let name, let nameValue, let nameEntry {
                if let first = seenNames[name] {
                    reader.report(
                        line: reader.line(of: nameEntry.value), nameEntry.path,
                        "duplicate route name \(nameValue.shown) (also routes[\(first)])")
                } else {
                    seenNames[name] = index
                }
            }
            let matchEntry = reader.requireKey(map, "match")
            let match = matchEntry.flatMap { self.match($0) }
            var upstreamName: String?
            if let item = reader.requireKey(map, "upstream"), let value = reader.nonEmptyScalar(item) {
                if declaredUpstreams.contains(value.text) {
                    upstreamName = value.text
                } else {
                    reader.report(
                        line: reader.line(of: item.value), item.path,
                        "unknown upstream \(value.shown) (not defined under upstreams)")
                }
            }
            guard let name, let match, let upstreamName else {
                // Still validate the remaining keys for their own problems.
                var unnamed = RouteConfig(name: "", match: RouteConfig.Match(), upstream: "")
                _ = routeOptions(map, match: nil, clients: clients, into: &unnamed)
                continue
            }
            var route = RouteConfig(name: name, match: match, upstream: upstreamName)
            guard routeOptions(map, match: match, clients: clients, into: &route) else { continue }
            if let item = map["buffering"], let value = reader.bool(item) { route.buffering = value }
            if route.websocket, let item = map["websocket"] {
                let line = reader.line(of: item.value)
                if stubUpstreams.contains(upstreamName) {
                    reader.report(
                        line: line, item.path,
                        "a stub upstream cannot answer a WebSocket handshake (upstream '\(upstreamName)' has stub)")
                } else if route.coalesce {
                    reader.report(line: line, item.path, "a WebSocket route cannot coalesce (set coalesce: false)")
                } else if let methods = route.match.methods, !methods.contains(.get) {
                    reader.report(line: line, item.path, "a WebSocket handshake is a GET: add GET to match.methods")
                }
            }
            if let shadowing = Builder.shadowingRoute(route, matchesSeen) {
                reader.report(
                    line: matchEntry.map { reader.line(of: $0.value, fallback: map.line) } ?? map.line,
                    "\(path).match",
                    "duplicate match: every request it matches is already taken by routes[\(shadowing.index)] (\(shownNames[shadowing.index] ?? "unnamed"))"
                )
            }
            matchesSeen.append((index, route))
            result.append(route)
        }
        return result
    }

    /// An earlier route with the same path, kind and host whose methods cover all of `route`'s methods.
    static func shadowingRoute(
        _ route: RouteConfig,
        _ earlier: [(index: Int, route: RouteConfig)]
    ) -> (index: Int, route: RouteConfig)? {
        let same = earlier.filter {
            $0.route.match.path == route.match.path && $0.route.match.pathPrefix == route.match.pathPrefix
                && $0.route.match.pathParams.map(Builder.templateShape)
                    == route.match.pathParams.map(Builder.templateShape)
                && $0.route.match.host == route.match.host
        }
        guard !same.isEmpty else { return nil }
        if same.contains(where: { $0.route.match.methods == nil }) {
            return same.first { $0.route.match.methods == nil }
        }
        guard let methods = route.match.methods else { return nil }
        var covered = Set<HTTPMethod>()
        for entry in same {
            for method in entry.route.match.methods ?? [] {
                covered.insert(method)
                if method == .get { covered.insert(.head) }
            }
        }
        return methods.allSatisfy(covered.contains) ? same.last : nil
    }

    /// A template with its parameter names erased (`/a/{id}` and `/a/{x}` match the same requests).
    static func templateShape(_ template: String) -> String {
        template.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("{") ? "{}" : String($0) }.joined(separator: "/")
    }

    /// A route's options past its name, match and upstream (`buffering` aside), read into `route`; false when one is
    /// invalid (reported).
    func routeOptions(
        _ map: YAMLReader.Entries, match: RouteConfig.Match?, clients: ClientsConfig?,
        into route: inout RouteConfig
    ) -> Bool {
        var ok = true
        if let item = map["rewrite"] {
            if let rewrite = rewrite(item, match: match) { route.rewrite = rewrite } else { ok = false }
        }
        if let item = map["coalesce"] {
            if let value = reader.bool(item) { route.coalesce = value } else { ok = false }
        }
        if let item = map["websocket"] {
            if case .mapping = item.value {
                // `{ idle_timeout: 10m }`: on, with its own idle limit.
                if let settings = reader.mapping(item.value, item.path, allowed: ["idle_timeout"]) {
                    route.websocket = true
                    if let idle = settings["idle_timeout"] {
                        if let value = reader.duration(idle) { route.websocketIdleTimeout = value } else { ok = false }
                    }
                } else {
                    ok = false
                }
            } else if let value = reader.bool(item) {
                route.websocket = value
            } else {
                ok = false
            }
        }
        if let item = map["coalesce_vary"] {
            if let values = reader.list(item) {
                for (index, value) in values.enumerated() {
                    if HeaderName.isValid(value.text) {
                        route.coalesceVary.append(value.text)
                    } else {
                        reader.report(line: value.line, "\(item.path)[\(index)]", "invalid header name \(value.shown)")
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        if let item = map["clients"] {
            if let values = reader.list(item) {
                let known = clients?.apiKeys?.keys.map(\.name)
                var names: [String] = []
                for (index, value) in values.enumerated() {
                    if let known {
                        if known.contains(value.text) {
                            names.append(value.text)
                        } else {
                            reader.report(
                                line: value.line, "\(item.path)[\(index)]",
                                "unknown client \(value.shown) (not defined under clients.api_keys.keys)")
                            ok = false
                        }
                    }
                }
                if known == nil {
                    reader.report(
                        line: reader.line(of: item.value), item.path,
                        "route lists clients but clients.api_keys is not configured")
                    ok = false
                }
                route.clients = names
            } else {
                ok = false
            }
        }
        if let item = map["timeout"] {
            if let value = reader.duration(item) { route.timeout = value } else { ok = false }
        }
        if let item = map["retries"] {
            if let retries = retries(item) { route.retries = retries } else { ok = false }
        }
        if let item = map["rate_limit"] {
            if let limit = rateLimit(item) { route.rateLimit = limit } else { ok = false }
        }
        if let item = map["max_body_bytes"] {
            if let value = reader.size(item, allowZero: true) { route.maxBodyBytes = value } else { ok = false }
        }
        return ok
    }

    func rateLimit(_ entry: YAMLReader.Entry) -> RateLimitConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["requests", "per", "burst", "by"]) else {
            return nil
        }
        let requests = reader.requireKey(map, "requests").flatMap { reader.int($0, in: 1...1_000_000_000) }
        var limit = RateLimitConfig(requests: requests ?? 1)
        var ok = requests != nil
        if let item = map["per"] {
            if let value = reader.duration(item) { limit.per = value } else { ok = false }
        }
        if let item = map["burst"] {
            if let value = reader.int(item, in: 1...1_000_000_000) { limit.burst = value } else { ok = false }
        }
        if let item = map["by"], let value = reader.scalar(item.value, item.path) {
            if let scope = RateLimitConfig.Scope(rawValue: value.text) {
                limit.by = scope
            } else {
                reader.report(line: value.line, item.path, "invalid value \(value.shown) (caller or route)")
                ok = false
            }
        }
        return ok ? limit : nil
    }

    func retries(_ entry: YAMLReader.Entry) -> RouteConfig.Retries? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["attempts", "statuses", "backoff"]) else {
            return nil
        }
        guard let attemptsEntry = reader.requireKey(map, "attempts") else { return nil }
        let attempts = reader.int(attemptsEntry, in: 1...10)
        var retries = RouteConfig.Retries(attempts: attempts ?? 1)
        var ok = attempts != nil
        if let item = map["statuses"] {
            if let values = reader.list(item) {
                for (index, value) in values.enumerated() {
                    if let status = Int(value.text), (500...599).contains(status) || status == 429 || status == 408 {
                        retries.statuses.append(status)
                    } else {
                        reader.report(
                            line: value.line, "\(item.path)[\(index)]",
                            "invalid retry status \(value.shown) (408, 429 or 5xx)")
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        if let item = map["backoff"] {
            if let value = reader.duration(item) { retries.backoff = value } else { ok = false }
        }
        return ok ? retries : nil
    }

    func rewrite(_ entry: YAMLReader.Entry, match: RouteConfig.Match?) -> RouteConfig.Rewrite? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: ["strip_prefix", "add_prefix"]) else {
            return nil
        }
        var rewrite = RouteConfig.Rewrite()
        var ok = true
        if let item = map["strip_prefix"] {
            if let value = routePath(item, stripTrailingSlash: true) {
                rewrite.stripPrefix = value
                if let match {
                    let literal = match.path ?? match.pathPrefix ?? match.pathParams ?? "/"
                    let prefixSegments = PathNormalizer.segments(of: value)
                    let matchSegments = PathNormalizer.segments(of: literal)
                    let applies =
                        prefixSegments.count <= matchSegments.count
                        && zip(prefixSegments, matchSegments).allSatisfy { $0 == $1 && !$1.hasPrefix("{") }
                    if !applies {
                        reader.report(
                            line: reader.line(of: item.value), item.path,
                            "strip_prefix is not a prefix of the route's match path")
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        if let item = map["add_prefix"] {
            if let value = routePath(item, stripTrailingSlash: true) { rewrite.addPrefix = value } else { ok = false }
        }
        return ok ? rewrite : nil
    }
}
