import HTTPWire
import Yams

/// A stub response's `match`: methods, path, query, headers and JSON body fields.
extension Builder {
    func stubMatch(_ entry: YAMLReader.Entry) -> StubMatchConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "methods", "path", "path_prefix", "path_params", "query", "headers", "json"
                ])
        else { return nil }
        var match = StubMatchConfig()
        var ok = true
        let paths = matchPaths(map, entry)
        (match.path, match.pathPrefix, match.pathParams) = (paths.path, paths.prefix, paths.params)
        if !paths.valid { ok = false }
        if let item = map["methods"] {
            if let values = reader.list(item, allowSingle: true), !values.isEmpty {
                var methods: [HTTPMethod] = []
                for (index, value) in values.enumerated() {
                    if let method = method(value, path: "\(item.path)[\(index)]") {
                        if !methods.contains(method) { methods.append(method) }
                    } else {
                        ok = false
                    }
                }
                match.methods = methods
            } else {
                if case .sequence(let items) = item.value, items.isEmpty {
                    reader.report(
                        line: reader.line(of: item.value), item.path,
                        "must list at least one method (omit the key to match every method)")
                }
                ok = false
            }
        }
        if let item = map["query"] {
            if let pairs = reader.stringMap(item) {
                match.query = pairs.map { StubNameValue(name: $0.key, value: $0.value.text) }
            } else {
                ok = false
            }
        }
        if let item = map["headers"] {
            if let pairs = headerList(item) {
                for pair in pairs {
                    if let apiKeyHeader, pair.name.equalsIgnoringASCIICase(apiKeyHeader) {
                        reader.report(
                            line: pair.source.line, pair.source.path,
                            "the API-key header (clients.api_keys.header) never reaches an upstream")
                        ok = false
                    }
                    match.headers.append(StubNameValue(name: pair.name, value: pair.value))
                }
            } else {
                ok = false
            }
        }
        if let item = map["json"] {
            if let fields = reader.mapping(item.value, item.path, allowed: nil) {
                for field in fields.items {
                    let path = field.key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                    guard !path.contains(where: \.isEmpty) else {
                        reader.report(
                            line: field.keyLine, field.path,
                            "invalid field path (keys joined with '.', e.g. user.address.city)")
                        ok = false
                        continue
                    }
                    if let value = jsonValue(field.value, path: field.path) {
                        match.json.append(StubJSONField(path: path, value: value))
                    } else {
                        ok = false
                    }
                }
            } else {
                ok = false
            }
        }
        return ok ? match : nil
    }

    /// A YAML value as JSON: plain `null`/`~`, `true`/`false` and numbers as such, every other scalar (and a quoted
    /// one) a string; sequences and mappings as arrays and objects.
    func jsonValue(_ node: Node, path: String) -> StubJSONValue? {
        switch node {
        case .scalar(let scalar):
            guard let value = reader.scalar(node, path) else { return nil }
            guard scalar.style == .plain else { return .string(value.text) }
            switch value.text {
            case "null", "Null", "NULL", "~", "": return .null
            case "true", "True", "TRUE": return .bool(true)
            case "false", "False", "FALSE": return .bool(false)
            default:
                if let number = Double(value.text), number.isFinite,
                    value.text.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true
                {
                    return .number(number)
                }
                return .string(value.text)
            }
        case .sequence(let items):
            var values: [StubJSONValue] = []
            for (index, item) in items.enumerated() {
                guard let value = jsonValue(item, path: "\(path)[\(index)]") else { return nil }
                values.append(value)
            }
            return .array(values)
        case .mapping(let mapping):
            var members: [String: StubJSONValue] = [:]
            for (key, item) in mapping {
                guard let name = key.scalar?.string else {
                    reader.report(line: reader.line(of: key), path, "mapping keys must be strings")
                    return nil
                }
                guard let value = jsonValue(item, path: YAMLReader.join(path, name)) else { return nil }
                members[name] = value
            }
            return .object(members)
        case .alias:
            reader.report(line: reader.line(of: node), path, "aliases are not supported here")
            return nil
        }
    }
}
