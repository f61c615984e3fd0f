import HTTPWire
import Yams

/// A route's `match` (one of `path`, `path_prefix`, `path_params`; `methods`; `host`) and the path checks it
/// shares with stub matches and `rewrite`.
extension Builder {
    func routePath(_ entry: YAMLReader.Entry, stripTrailingSlash: Bool) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        guard value.text.hasPrefix("/") else {
            reader.report(line: value.line, entry.path, "must start with '/'")
            return nil
        }
        switch PathNormalizer.normalize(path: value.text) {
        case .failure(let error):
            reader.report(line: value.line, entry.path, "invalid path: \(error.reason)")
            return nil
        case .success(var normalized):
            let segments = value.text.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            if segments.dropLast().contains(where: { $0.isEmpty })
                || segments.contains(where: { $0 == "." || $0 == ".." })
            {
                reader.report(line: value.line, entry.path, "path must not contain empty, '.' or '..' segments")
                return nil
            }
            if stripTrailingSlash, normalized.count > 1, normalized.hasSuffix("/") { normalized.removeLast() }
            return normalized
        }
    }

    /// A `path_params` template: `{name}` segments are set aside, the literal rest is checked and normalised.
    func templatePath(_ entry: YAMLReader.Entry) -> String? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        var parameters: [String] = []
        let probe = value.text.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count >= 2 else { return String(segment) }
            parameters.append(String(segment))
            return "moya-param-\(parameters.count - 1)-"
        }.joined(separator: "/")
        let probeEntry = YAMLReader.Entry(
            key: entry.key, keyLine: entry.keyLine,
            value: .scalar(Node.Scalar(probe, Tag(.implicit, .basic), .plain, entry.value.mark)),
            path: entry.path)
        guard let normalized = routePath(probeEntry, stripTrailingSlash: false) else { return nil }
        var result = normalized
        for (index, parameter) in parameters.enumerated() {
            result = result.replacingOccurrences(of: "moya-param-\(index)-", with: parameter)
        }
        return result
    }

    func match(_ entry: YAMLReader.Entry) -> RouteConfig.Match? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: ["path", "path_prefix", "path_params", "methods", "host"])
        else {
            return nil
        }
        var match = RouteConfig.Match()
        var ok = true
        if !["path", "path_prefix", "path_params"].contains(where: map.has) {
            reader.report(line: map.line, entry.path, "one of path, path_prefix or path_params is required")
            ok = false
        }
        let paths = matchPaths(map, entry)
        (match.path, match.pathPrefix, match.pathParams) = (paths.path, paths.prefix, paths.params)
        if !paths.valid { ok = false }
        if let item = map["methods"] {
            if let values = reader.list(item) {
                if values.isEmpty {
                    reader.report(
                        line: reader.line(of: item.value), item.path,
                        "must list at least one method (omit the key to allow every method)")
                    ok = false
                }
                var methods: [HTTPMethod] = []
                for (index, value) in values.enumerated() {
                    let itemPath = "\(item.path)[\(index)]"
                    if value.text == "CONNECT" || value.text == "TRACE" {
                        // The gateway answers both with 405 itself (no tunnels; TRACE would echo injected credentials).
                        reader.report(line: value.line, itemPath, "\(value.text) is never routed")
                        ok = false
                    } else if let method = method(value, path: itemPath) {
                        if !methods.contains(method) { methods.append(method) }
                    } else {
                        ok = false
                    }
                }
                match.methods = methods
            } else {
                ok = false
            }
        }
        if let item = map["host"], let value = reader.string(item) {
            let host = value.lowercased()
            let valid =
                host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2
                ? host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
                : host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }
            if valid {
                match.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            } else {
                reader.report(
                    line: reader.line(of: item.value), item.path,
                    "invalid host (a name or address without port)")
                ok = false
            }
        }
        return ok ? match : nil
    }

    /// A match's `path`, `path_prefix` or `path_params` (a route's or a stub response's), of which it may set one.
    /// `valid` is false when a problem was reported.
    func matchPaths(_ map: YAMLReader.Entries, _ entry: YAMLReader.Entry)
        -> (path: String?, prefix: String?, params: String?, valid: Bool)
    {
        var valid = true
        let kinds = ["path", "path_prefix", "path_params"].filter { map.has($0) }
        if kinds.count > 1 {
            reader.report(
                line: map.line, entry.path,
                "use only one of path, path_prefix and path_params (found \(kinds.joined(separator: ", ")))")
            valid = false
        }
        var path: String?
        var prefix: String?
        var params: String?
        if let item = map["path"] {
            path = routePath(item, stripTrailingSlash: false)
            if path == nil { valid = false }
        }
        if let item = map["path_prefix"] {
            prefix = routePath(item, stripTrailingSlash: true)
            if prefix == nil { valid = false }
        }
        if let item = map["path_params"] {
            if let value = templatePath(item), validateTemplate(value, item) { params = value } else { valid = false }
        }
        return (path, prefix, params, valid)
    }

    /// A method as `match.methods` lists it: a case-sensitive upper-case token (`-` and `_` allowed); nil when not
    /// (reported).
    func method(_ value: ScalarValue, path: String) -> HTTPMethod? {
        guard !value.text.isEmpty,
            value.text.allSatisfy({ $0.isASCII && ($0.isUppercase || $0 == "-" || $0 == "_") })
        else {
            reader.report(
                line: value.line, path,
                "invalid method \(value.shown) (methods are case-sensitive upper-case tokens, e.g. GET)")
            return nil
        }
        return HTTPMethod(value.text)
    }

    func validateTemplate(_ template: String, _ entry: YAMLReader.Entry) -> Bool {
        // A template that came from the environment or a secret file is never quoted, not even a parameter's name.
        let hidden = reader.scalar(entry.value, entry.path).map { $0.fromEnvironment || $0.fromSecretFile } ?? false
        func shown(_ name: Substring) -> String { hidden ? "(a value from the environment)" : "'\(name)'" }
        var names = Set<String>()
        for segment in PathNormalizer.segments(of: template) {
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                let name = segment.dropFirst().dropLast()
                guard YAMLReader.isVariableName(name) else {
                    reader.report(
                        line: reader.line(of: entry.value), entry.path, "invalid parameter name \(shown(name))")
                    return false
                }
                guard names.insert(String(name)).inserted else {
                    reader.report(line: reader.line(of: entry.value), entry.path, "duplicate parameter \(shown(name))")
                    return false
                }
            } else if segment.contains("{") || segment.contains("}") {
                reader.report(
                    line: reader.line(of: entry.value), entry.path,
                    "a parameter must be a whole segment, like /users/{id}")
                return false
            }
        }
        if names.isEmpty {
            reader.report(
                line: reader.line(of: entry.value), entry.path,
                "has no {parameter} (use path for an exact path)")
            return false
        }
        return true
    }
}
