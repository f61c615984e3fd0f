import Gateway
import HTTPWire

/// `routing`: a request (method, `Host`, target) through the `RouteTable` of a fixed configuration with every kind of
/// route: exact paths, templates, prefixes (with rewrites and a base path), a host-bound route and method lists.
///
/// Input: the method on the first line, the Host on the second (an empty line: none), the target after them.
///
/// Checked: a match allows the method, matches the normalised path (exact, at a segment boundary, or the template
/// with non-empty parameters without `/`) and its host; the upstream path starts with the upstream's base path,
/// is normalised and carries the query as sent; 405 lists methods that do not include the one asked; 400 only for
/// CONNECT or a target the normaliser refuses; and the normalised target routes exactly as the original one.
enum RoutingTarget {
    static let target = FuzzTarget(
        name: "routing",
        summary: "route table: matches obey path/host/method rules, upstream paths normalised, normalised = original",
        maxLength: 4096, dictionary: "path.dict", run: run)

    static let configuration = """
        upstreams:
          users: { base_url: "http://127.0.0.1:9001/v1/" }
          files: { base_url: "http://127.0.0.1:9002" }
          stubbed: { stub: { status: 200, body: ok } }
        routes:
          - { name: health, match: { path: /health }, upstream: stubbed }
          - { name: health-post, match: { path: /health/, methods: [POST] }, upstream: stubbed }
          - name: user
            match: { path_params: "/users/{id}", methods: [GET, PUT] }
            upstream: users
          - name: user-post
            match: { path_params: "/users/{id}/posts/{post}" }
            upstream: users
          - name: user-literal
            match: { path_params: "/users/{id}/profile", methods: [DELETE] }
            upstream: users
          - name: api
            match: { path_prefix: /api, methods: [GET, POST] }
            upstream: users
            rewrite: { strip_prefix: /api, add_prefix: /internal }
          - name: api-host
            match: { path_prefix: /api/admin, host: admin.example.com }
            upstream: files
          - name: static
            match: { path_prefix: /static/, methods: [GET] }
            upstream: files
            rewrite: { strip_prefix: /static }
          - { name: root, match: { path_prefix: /, methods: [GET, OPTIONS] }, upstream: files }
        """

    static let table: RouteTable = {
        switch HermeticConfig.load(configuration) {
        case .success(let config): return RouteTable(config: config)
        case .failure(let errors): fatalError("the routing target's configuration is invalid:\n\(errors)")
        }
    }()

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let lines = FuzzBytes.split(bytes, separator: 0x0A)
        guard lines.count >= 3 else { return }
        let method = HTTPMethod(FuzzBytes.string(lines[0]))
        let host = lines[1].isEmpty ? nil : FuzzBytes.string(lines[1])
        let target = FuzzBytes.string(UnsafeRawBufferPointer(rebasing: bytes[(lines[0].count + lines[1].count + 2)...]))
        let result = table.route(method: method, host: host, target: target)
        let normalized = PathNormalizer.normalize(target: target)
        switch result {
        case .matched(let route, let upstreamPath, let params):
            guard case .success(let normal) = normalized else {
                throw failure("matched a target the normaliser refuses")
            }
            try checkMatch(
                route, upstreamPath: upstreamPath, params: params, method: method, host: host, normal: normal)
        case .methodNotAllowed(let allow):
            guard case .success = normalized else { throw failure("405 for a target the normaliser refuses") }
            try check(!allow.isEmpty, "405 without Allow")
            try check(!allow.contains(method.rawValue), "405 for \(method) with Allow \(allow)")
        case .notFound:
            guard case .success = normalized else { throw failure("404 for a target the normaliser refuses") }
        case .badRequest:
            guard method == .connect || (try? normalized.get()) == nil else {
                throw failure("400 for a target the normaliser accepts")
            }
        }
        if method != .connect, case .success(let normal) = normalized {
            let again = table.route(
                method: method, host: host,
                target: normal.path + (normal.query.map { "?" + $0 } ?? ""))
            try check(again == result, "the normalised target routes differently: \(result) vs \(again)")
        }
    }

    static func checkMatch(
        _ route: CompiledRoute, upstreamPath: String, params: [String: String], method: HTTPMethod,
        host: String?, normal: NormalizedTarget
    ) throws(FuzzFailure) {
        try check(route.allows(method), "matched a route that does not allow \(method)")
        if let routeHost = route.config.match.host {
            try check(host.map(hostName) == routeHost, "matched host \(routeHost) for Host \(String(describing: host))")
        }
        let path = normal.path
        switch route.kind {
        case .exact(let exact):
            try check(exact == path, "exact route \(exact) matched \(path)")
        case .prefix(let prefix):
            try check(
                prefix == "/" || path == prefix || path.hasPrefix(prefix + "/"),
                "prefix \(prefix) matched \(path) off a segment boundary")
        case .template(let segments):
            let pathSegments =
                path == "/"
                ? []
                : path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
                    .map(String.init)
            try check(pathSegments.count == segments.count, "template with \(segments.count) segments matched \(path)")
            try check(params.count == route.parameterNames.count, "parameters \(params) for \(route.parameterNames)")
            for (literal, segment) in zip(segments, pathSegments) {
                if let literal { try check(literal == segment, "literal \(literal) matched \(segment)") }
            }
            for value in params.values {
                try check(!value.isEmpty && !value.contains("/"), "parameter value \(value)")
            }
        }
        let base = route.upstream.baseURL?.basePath ?? ""
        try check(upstreamPath.hasPrefix(base + "/"), "upstream path \(upstreamPath) outside the base path \(base)")
        let upstreamOnlyPath = upstreamPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard case .success(let again) = PathNormalizer.normalize(path: String(upstreamOnlyPath)) else {
            throw failure("upstream path \(upstreamPath) is refused by the normaliser")
        }
        try check(again == upstreamOnlyPath, "upstream path \(upstreamPath) is not normalised")
        let query = upstreamPath.firstIndex(of: "?").map { String(upstreamPath[upstreamPath.index(after: $0)...]) }
        try check(
            query == normal.query, "query \(String(describing: normal.query)) became \(String(describing: query))")
    }

    /// A Host header's name as routes compare it: lower case, no port, no trailing dot, no IPv6 brackets.
    static func hostName(_ host: String) -> String {
        var trimmed = Substring(host)
        while trimmed.first == " " || trimmed.first == "\t" { trimmed.removeFirst() }
        while trimmed.last == " " || trimmed.last == "\t" { trimmed.removeLast() }
        var text = Substring(String(trimmed).lowercased())
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return String(text) }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        if text.hasSuffix(".") { text = text.dropLast() }
        return String(text)
    }
}
