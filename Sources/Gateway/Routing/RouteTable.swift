import HTTPWire

/// A route compiled for matching.
///
/// A class: every request's routing result carries its route, and copying a struct this size (a route's and an
/// upstream's whole configuration) retains every field each time.
package final class CompiledRoute: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// `match.path`: the normalised path must equal it.
        case exact(String)
        /// `match.path_params`: segments, `nil` for a parameter (named in ``parameterNames``).
        case template([String?])
        /// `match.path_prefix` (no trailing slash; `/` matches everything), on segment boundaries.
        case prefix(String)
    }

    /// The route's position in the file.
    package let declarationIndex: Int
    package let config: RouteConfig
    package let upstream: UpstreamConfig
    package let kind: Kind
    /// Names of the template's parameters, in segment order.
    package let parameterNames: [String]

    package init(
        declarationIndex: Int, config: RouteConfig, upstream: UpstreamConfig, kind: Kind, parameterNames: [String]
    ) {
        self.declarationIndex = declarationIndex
        self.config = config
        self.upstream = upstream
        self.kind = kind
        self.parameterNames = parameterNames
    }

    package static func == (lhs: CompiledRoute, rhs: CompiledRoute) -> Bool {
        lhs === rhs
            || (lhs.declarationIndex == rhs.declarationIndex && lhs.config == rhs.config
                && lhs.upstream == rhs.upstream && lhs.kind == rhs.kind && lhs.parameterNames == rhs.parameterNames)
    }

    package var name: String { config.name }

    /// Whether `method` is allowed: no list allows everything; GET also allows HEAD. Case-sensitive.
    package func allows(_ method: HTTPMethod) -> Bool {
        guard let methods = config.match.methods else { return true }
        return methods.contains(method) || (method == .head && methods.contains(.get))
    }

    /// The methods for `Allow` (GET adds HEAD); `nil` when every method is allowed.
    package var allowedMethods: [String]? {
        guard let methods = config.match.methods else { return nil }
        var names: [String] = []
        for method in methods {
            if !names.contains(method.rawValue) { names.append(method.rawValue) }
            if method == .get, !names.contains("HEAD") { names.append("HEAD") }
        }
        return names
    }

    /// The match as written for `routes` output (`path /x`, `prefix /api`, `params /u/{id}`).
    package var matchDescription: String {
        switch kind {
        case .exact(let path): return "path \(path)"
        case .prefix(let prefix): return "prefix \(prefix)"
        case .template: return "params \(config.match.pathParams ?? "")"
        }
    }

    /// Sort key: exact paths first, then templates (more literal segments, then more segments), then longer prefixes;
    /// a route with a `host` before one without at the same specificity; then declaration order.
    var precedence: (Int, Int, Int, Int, Int) {
        let hostRank = config.match.host == nil ? 1 : 0
        switch kind {
        case .exact:
            return (0, 0, 0, hostRank, declarationIndex)
        case .template(let segments):
            let literals = segments.filter { $0 != nil }.count
            return (1, -literals, -segments.count, hostRank, declarationIndex)
        case .prefix(let prefix):
            let length = prefix == "/" ? 0 : PathNormalizer.segments(of: prefix).count
            return (2, -length, -prefix.utf8.count, hostRank, declarationIndex)
        }
    }
}

/// What the router decided for a request.
package enum RouteResult: Sendable, Equatable {
    /// `upstreamPath` is the origin-form target to send upstream: the upstream's base path, the rewritten normalised
    /// path and the query exactly as the client sent it (`/v1/users/7?x=1`). It always starts with the base path.
    case matched(CompiledRoute, upstreamPath: String, pathParams: [String: String])
    /// No route's path (and host) matched: 404 `not_found`.
    case notFound
    /// Some route's path matched but none allows the method: 405 `method_not_allowed` with `Allow: …`.
    case methodNotAllowed(allow: [String])
    /// The target or method is refused (absolute-form, CONNECT, traversal, bad encoding): 400 `bad_request`.
    case badRequest(String)
}

/// The route table: routes from a ``GatewayConfig`` in precedence order. Immutable and `Sendable`; build a new one on
/// reload.
package struct RouteTable: Sendable {
    /// Routes in the order they are tried.
    package let routes: [CompiledRoute]
    /// Positions in ``routes`` of the exact-path routes, by path (each list in precedence order). Exact routes sort
    /// before every other kind, so trying these and then ``otherRoutes`` keeps the precedence order.
    private let exactRoutes: [String: [Int]]
    /// The same, as a list in the order of the paths' first routes, when there are at most ``shortListLimit`` exact
    /// paths: comparing a few paths costs less than hashing the request's (nil otherwise).
    private let shortExactRoutes: [(path: String, positions: [Int])]?
    /// The most exact paths looked up by comparison rather than hashing.
    private static let shortListLimit = 4
    /// Positions in ``routes`` of the template and prefix routes, in precedence order.
    private let otherRoutes: [Int]
    /// Whether any route has a `host`: the request's host is only normalised then.
    private let matchesHosts: Bool

    /// Compiles the routes of a loaded configuration (routes whose upstream is missing are skipped; the loader never
    /// produces such a configuration).
    package init(config: GatewayConfig) {
        var compiled: [CompiledRoute] = []
        for (index, route) in config.routes.enumerated() {
            guard let upstream = config.upstream(named: route.upstream) else { continue }
            var names: [String] = []
            let kind: CompiledRoute.Kind
            if let path = route.match.path {
                kind = .exact(path)
            } else if let template = route.match.pathParams {
                // The same parsing as a stub response's `match.path_params` (PathPattern).
                let segments: [String?]
                (segments, names) = PathPattern.templateSegments(of: template)
                kind = .template(segments)
            } else {
                kind = .prefix(route.match.pathPrefix ?? "/")
            }
            compiled.append(
                CompiledRoute(
                    declarationIndex: index, config: route, upstream: upstream, kind: kind,
                    parameterNames: names))
        }
        routes = compiled.sorted { $0.precedence < $1.precedence }
        var exact: [String: [Int]] = [:]
        var exactPaths: [String] = []
        var other: [Int] = []
        for (position, route) in routes.enumerated() {
            if case .exact(let path) = route.kind {
                if exact[path] == nil { exactPaths.append(path) }
                exact[path, default: []].append(position)
            } else {
                other.append(position)
            }
        }
        exactRoutes = exact
        // In precedence order (not the dictionary's, which changes from process to process).
        shortExactRoutes =
            exact.count <= Self.shortListLimit ? exactPaths.map { (path: $0, positions: exact[$0] ?? []) } : nil
        otherRoutes = other
        matchesHosts = routes.contains { $0.config.match.host != nil }
    }

    /// Routes a request head: its method, `Host` header and target.
    package func route(_ head: HTTPRequestHead) -> RouteResult {
        resolve(method: head.method, host: matchesHosts ? head.headers.first(.host) : nil, target: head.target)
    }

    /// Routes `method` + `target`; `host` is the `Host` header (or `:authority`), compared without port and case.
    package func route(method: HTTPMethod, host: String?, target: String) -> RouteResult {
        resolve(method: method, host: host, target: target)
    }

    /// Routing by method, `Host` (read from a head only when some route matches hosts) and target.
    private func resolve(method: HTTPMethod, host: String?, target: String) -> RouteResult {
        if MethodTest.isConnect(method) { return .badRequest("CONNECT is not supported") }
        let normalized: NormalizedTarget
        switch PathNormalizer.normalize(target: target) {
        case .failure(let error): return .badRequest(error.reason)
        case .success(let value): normalized = value
        }
        let requestHost = matchesHosts ? host.map(RouteTable.hostWithoutPort) : nil
        var segments: [Substring]?
        var allow: [String] = []
        var pathMatched = false
        func attempt(_ position: Int) -> RouteResult? {
            let route = routes[position]
            if let routeHost = route.config.match.host, routeHost != requestHost { return nil }
            let params: [String: String]?
            switch route.kind {
            case .exact:
                params = [:]
            case .prefix(let prefix):
                params = PathNormalizer.hasSegmentPrefix(normalized.path, prefix) ? [:] : nil
            case .template:
                if segments == nil { segments = PathNormalizer.segments(of: normalized.path) }
                params = RouteTable.match(route, path: normalized.path, segments: segments ?? [])
            }
            guard let params else { return nil }
            pathMatched = true
            if route.allows(method) {
                let rewritten = RouteTable.rewrite(normalized.path, route.config.rewrite)
                let base = route.upstream.baseURL?.basePath ?? ""
                var upstreamPath = RouteTable.join(base, rewritten)
                if let query = normalized.query { upstreamPath += "?" + query }
                return .matched(route, upstreamPath: upstreamPath, pathParams: params)
            }
            for name in route.allowedMethods ?? [] where !allow.contains(name) { allow.append(name) }
            return nil
        }
        for position in exactPositions(normalized.path) {
            if let result = attempt(position) { return result }
        }
        for position in otherRoutes {
            if let result = attempt(position) { return result }
        }
        return pathMatched ? .methodNotAllowed(allow: allow) : .notFound
    }

    /// The positions of the exact routes for `path`, in precedence order.
    private func exactPositions(_ path: String) -> [Int] {
        guard let shortExactRoutes else { return exactRoutes[path] ?? [] }
        for entry in shortExactRoutes where entry.path == path { return entry.positions }
        return []
    }

    static func match(_ route: CompiledRoute, path: String, segments: [Substring]) -> [String: String]? {
        switch route.kind {
        case .exact(let exact):
            return exact == path ? [:] : nil
        case .prefix(let prefix):
            return PathNormalizer.hasSegmentPrefix(path, prefix) ? [:] : nil
        case .template(let template):
            guard template.count == segments.count else { return nil }
            var params: [String: String] = [:]
            var nameIndex = 0
            for (pattern, segment) in zip(template, segments) {
                if let literal = pattern {
                    guard literal == segment else { return nil }
                } else {
                    guard !segment.isEmpty, nameIndex < route.parameterNames.count else { return nil }
                    params[route.parameterNames[nameIndex]] = String(segment)
                    nameIndex += 1
                }
            }
            return params
        }
    }

    /// strip_prefix (on a segment boundary), then add_prefix. The result starts with `/`.
    static func rewrite(_ path: String, _ rewrite: RouteConfig.Rewrite?) -> String {
        guard let rewrite else { return path }
        var result = path
        if let strip = rewrite.stripPrefix, strip != "/", PathNormalizer.hasSegmentPrefix(path, strip) {
            result = String(path.dropFirst(strip.count))
            if result.isEmpty { result = "/" }
        }
        if let add = rewrite.addPrefix, add != "/" {
            result = add + result
        }
        return result
    }

    /// `base` (no trailing slash, may be empty) + `path` (starts with `/`).
    static func join(_ base: String, _ path: String) -> String {
        base.isEmpty ? path : base + path
    }

    /// `Example.COM.:8080` → `example.com`; `[::1]:80` → `::1`.
    static func hostWithoutPort(_ host: String) -> String {
        let trimmed = host.trimmingSpaces().lowercased()
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else { return trimmed }
            return String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
        }
        var name = Substring(trimmed)
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        if name.hasSuffix(".") { name = name.dropLast() }
        return String(name)
    }
}
