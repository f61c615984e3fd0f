import HTTPWire
import Yams

/// Parsing of a stub's `responses` (matches, sequences), `faults`, `template` and `seed`, and the templates of every
/// answer, compiled here once (a problem in one is reported with its key path and line, as any other).
extension Builder {
    /// Where a value was written, for messages.
    struct Source {
        var line: Int
        var path: String
    }

    /// An answer with inheritance resolved, and where its parts were written (for template problems).
    struct ResolvedAnswer {
        var answer = StubAnswerConfig()
        var template = true
        /// Parallel to `answer.headers`.
        var headerSources: [Source] = []
        var bodySource: Source?
        var faultsSource: Source?
        var errorRateSource: Source?
    }

    /// The keys one level (a response, a step) sets; nil = not set there.
    struct AnswerKeys {
        var status: Int?
        var headers: [(name: String, value: String, source: Source)]?
        var body: (bytes: [UInt8], file: String?, generated: Int?, source: Source)?
        var delay: Duration?
        var latency: StubLatencyConfig?
        var errorRate: (value: Double, source: Source)?
        var errorStatus: Int?
        var faults: (value: [StubFaultConfig], source: Source)?
        var template: Bool?
    }

    static let answerKeys = ["status", "headers", "body", "body_file", "body_bytes", "delay", "latency", "error_rate",
                             "error_status", "faults", "template"]

    /// The stub-level keys past the default answer's: `faults`, `template`, `seed`, `responses`; then every answer's
    /// templates. `stub` already holds the default answer's keys. False when something was reported.
    func stubAnswers(_ map: YAMLReader.Entries, _ entry: YAMLReader.Entry, into stub: inout StubConfig) -> Bool {
        var ok = true
        var template = true
        if let item = map["template"] {
            if let value = reader.bool(item) { template = value } else { ok = false }
        }
        if let item = map["seed"] {
            if let value = reader.int(item, in: 0...Int.max) { stub.seed = UInt64(value) } else { ok = false }
        }
        var faultsSource: Source?
        if let item = map["faults"] {
            faultsSource = Source(line: item.keyLine, path: item.path)
            if let faults = stubFaults(item) { stub.faults = faults } else { ok = false }
        }
        // The stub's own answer, as the level the responses inherit from.
        var base = ResolvedAnswer()
        base.answer = stub.defaultAnswer
        base.template = template
        base.faultsSource = faultsSource
        base.errorRateSource = map["error_rate"].map { Source(line: $0.keyLine, path: $0.path) }
        base.headerSources = headerSources(map["headers"])
        if base.headerSources.count != stub.headers.count {
            base.headerSources = Array(repeating: Source(line: map.line, path: YAMLReader.join(entry.path, "headers")),
                                       count: stub.headers.count)
        }
        if let item = map["body"] ?? map["body_file"] {
            base.bodySource = Source(line: reader.line(of: item.value, fallback: item.keyLine), path: item.path)
        }
        var reported = Set<String>()
        if !checkRates(base, reported: &reported) { ok = false }

        if let item = map["responses"] {
            stub.hasDefault = ["status", "body", "body_file", "body_bytes"].contains { map.has($0) }
            // What a response inherits: headers, latency, errors, faults, template; not the status or the body.
            var inherited = base
            inherited.answer.status = 200
            inherited.answer.body = []
            inherited.answer.bodyFile = nil
            inherited.answer.bodyBytes = nil
            inherited.bodySource = nil
            if let responses = stubResponses(item, inheriting: inherited, reported: &reported) {
                stub.responses = responses
            } else {
                ok = false
            }
        }
        // The default answer's templates (its match has no parameters).
        if !compileTemplates(&base, parameterNames: [], reported: &reported) { ok = false }
        stub.bodyTemplate = base.answer.bodyTemplate
        stub.headerTemplates = base.answer.headerTemplates
        return ok
    }

    // MARK: responses

    func stubResponses(_ entry: YAMLReader.Entry, inheriting inherited: ResolvedAnswer,
                       reported: inout Set<String>) -> [StubResponseConfig]? {
        guard case .sequence(let sequence) = entry.value else {
            reader.report(line: reader.line(of: entry.value), entry.path,
                          "expected a list, got \(YAMLReader.kindName(entry.value))")
            return nil
        }
        var result: [StubResponseConfig] = []
        var ok = true
        for (index, node) in sequence.enumerated() {
            let path = "\(entry.path)[\(index)]"
            guard let map = reader.mapping(node, path, allowed: ["match"] + Self.answerKeys + ["sequence"]) else {
                ok = false
                continue
            }
            var match = StubMatchConfig()
            if let item = map["match"] {
                if let parsed = stubMatch(item) { match = parsed } else { ok = false }
            }
            guard let keys = answerKeys(map, path: path) else {
                ok = false
                continue
            }
            var own = apply(keys, onto: inherited)
            let names = match.parameterNames
            if let item = map["sequence"] {
                guard case .sequence(let steps) = item.value, steps.count > 0 else {
                    reader.report(line: reader.line(of: item.value), item.path, "expected a list of one or more answers")
                    ok = false
                    continue
                }
                var answers: [StubAnswerConfig] = []
                for (stepIndex, stepNode) in steps.enumerated() {
                    let stepPath = "\(item.path)[\(stepIndex)]"
                    guard let stepMap = reader.mapping(stepNode, stepPath, allowed: Self.answerKeys),
                          let stepKeys = answerKeys(stepMap, path: stepPath) else {
                        ok = false
                        continue
                    }
                    var step = apply(stepKeys, onto: own)
                    if !checkRates(step, reported: &reported) { ok = false }
                    if !compileTemplates(&step, parameterNames: names, reported: &reported) { ok = false }
                    answers.append(step.answer)
                }
                if answers.count == steps.count {
                    result.append(StubResponseConfig(match: match, answers: answers, isSequence: true))
                }
            } else {
                if !checkRates(own, reported: &reported) { ok = false }
                if !compileTemplates(&own, parameterNames: names, reported: &reported) { ok = false }
                result.append(StubResponseConfig(match: match, answers: [own.answer], isSequence: false))
            }
        }
        return ok ? result : nil
    }

    /// The answer keys one level sets (nil when one of them is invalid; the problem is reported).
    func answerKeys(_ map: YAMLReader.Entries, path: String) -> AnswerKeys? {
        var keys = AnswerKeys()
        var ok = true
        if let item = map["status"] {
            if let value = reader.int(item, in: 200...599) { keys.status = value } else { ok = false }
        }
        if let item = map["headers"] {
            if let headers = headerList(item) { keys.headers = headers } else { ok = false }
        }
        let bodySources = ["body", "body_file", "body_bytes"].filter { map.has($0) }
        if bodySources.count > 1 {
            reader.report(line: map.line, path,
                          "use only one of body, body_file and body_bytes (found \(bodySources.joined(separator: ", ")))")
            ok = false
        } else if let item = map["body"], let value = reader.scalar(item.value, item.path) {
            keys.body = (Array(value.text.utf8), nil, nil, Source(line: value.line, path: item.path))
        } else if let item = map["body_file"], let value = reader.scalar(item.value, item.path) {
            let resolved = resolve(value.text)
            if value.text.isEmpty {
                reader.report(line: value.line, item.path, "must not be empty")
                ok = false
            } else if let bytes = loader.readFile(resolved) {
                keys.body = (bytes, resolved, nil, Source(line: value.line, path: item.path))
            } else {
                reader.report(line: value.line, item.path,
                              value.fromEnvironment ? "cannot read the file" : "cannot read the file \(resolved)")
                ok = false
            }
        } else if let item = map["body_bytes"] {
            if let size = reader.size(item, allowZero: true) {
                if size > 1 << 30 {
                    reader.report(line: reader.line(of: item.value), item.path, "must be at most 1GiB")
                    ok = false
                } else {
                    keys.body = (StubBody.generate(count: Int(size)), nil, Int(size),
                                 Source(line: item.keyLine, path: item.path))
                }
            } else {
                ok = false
            }
        }
        if let item = map["delay"] {
            if let value = reader.duration(item, allowZero: true) { keys.delay = value } else { ok = false }
        }
        if let item = map["latency"] {
            if map.has("delay") {
                reader.report(line: item.keyLine, item.path, "use either delay or latency, not both")
                ok = false
            }
            if let latency = latency(item) { keys.latency = latency } else { ok = false }
        }
        if let item = map["error_rate"] {
            if let value = reader.double(item, in: 0...1) {
                keys.errorRate = (value, Source(line: item.keyLine, path: item.path))
            } else {
                ok = false
            }
        }
        if let item = map["error_status"] {
            if let value = reader.int(item, in: 400...599) { keys.errorStatus = value } else { ok = false }
        }
        if let item = map["faults"] {
            if let faults = stubFaults(item) {
                keys.faults = (faults, Source(line: item.keyLine, path: item.path))
            } else {
                ok = false
            }
        }
        if let item = map["template"] {
            if let value = reader.bool(item) { keys.template = value } else { ok = false }
        }
        return ok ? keys : nil
    }

    /// `keys` over `parent`: what the level sets replaces the parent's (a header replaces the parent's fields of its
    /// name; `delay` and `latency` replace each other).
    func apply(_ keys: AnswerKeys, onto parent: ResolvedAnswer) -> ResolvedAnswer {
        var result = parent
        if let status = keys.status { result.answer.status = status }
        if let headers = keys.headers {
            var fields = Array(zip(Array(parent.answer.headers), parent.headerSources))
            for header in headers {
                fields.removeAll { $0.0.name.equalsIgnoringASCIICase(header.name) }
            }
            for header in headers {
                fields.append((HTTPFields.Field(name: header.name, value: header.value), header.source))
            }
            result.answer.headers = HTTPFields(fields.map { ($0.0.name, $0.0.value) })
            result.headerSources = fields.map(\.1)
        }
        if let body = keys.body {
            result.answer.body = body.bytes
            result.answer.bodyFile = body.file
            result.answer.bodyBytes = body.generated
            result.bodySource = body.source
        }
        if let delay = keys.delay {
            result.answer.delay = delay
            result.answer.latency = nil
        }
        if let latency = keys.latency {
            result.answer.latency = latency
            result.answer.delay = .zero
        }
        if let rate = keys.errorRate {
            result.answer.errorRate = rate.value
            result.errorRateSource = rate.source
        }
        if let status = keys.errorStatus { result.answer.errorStatus = status }
        if let faults = keys.faults {
            result.answer.faults = faults.value
            result.faultsSource = faults.source
        }
        if let template = keys.template { result.template = template }
        return result
    }

    /// The fault rates and `error_rate` of one answer add up to at most 1.
    func checkRates(_ answer: ResolvedAnswer, reported: inout Set<String>) -> Bool {
        let total = answer.answer.faults.reduce(answer.answer.errorRate) { $0 + $1.rate }
        guard total > 1 + 1e-9 else { return true }
        let source = answer.faultsSource ?? answer.errorRateSource ?? Source(line: 1, path: "stub")
        report(source, "the fault rates and error_rate add up to \(total), more than 1", reported: &reported)
        return false
    }

    /// Compiles the answer's body and header templates (unless `template: false` or a generated body).
    func compileTemplates(_ resolved: inout ResolvedAnswer, parameterNames: [String], reported: inout Set<String>) -> Bool {
        guard resolved.template else { return true }
        var ok = true
        let isJSON = resolved.answer.headers.first(name: "Content-Type").map(Self.isJSONType) ?? false
        if resolved.answer.bodyBytes == nil, let source = resolved.bodySource {
            do {
                resolved.answer.bodyTemplate = try StubTemplate.compile(resolved.answer.body, parameterNames: parameterNames,
                                                                        escaping: isJSON ? .json : .none)
                if let template = resolved.answer.bodyTemplate, !checkAPIKeyHeader(template, source, reported: &reported) {
                    ok = false
                }
            } catch {
                report(source, error.description, reported: &reported)
                ok = false
            }
        }
        var templates: [StubHeaderTemplate] = []
        for (index, field) in resolved.answer.headers.enumerated() {
            let source = resolved.headerSources.indices.contains(index)
                ? resolved.headerSources[index] : Source(line: 1, path: "headers")
            do {
                if let template = try StubTemplate.compile(Array(field.value.utf8), parameterNames: parameterNames,
                                                           escaping: .header) {
                    if !checkAPIKeyHeader(template, source, reported: &reported) { ok = false }
                    templates.append(StubHeaderTemplate(index: index, template: template))
                }
            } catch {
                report(source, error.description, reported: &reported)
                ok = false
            }
        }
        resolved.answer.headerTemplates = templates
        return ok
    }

    /// `application/json` and `…+json` media types.
    static func isJSONType(_ value: String) -> Bool {
        let media = value.split(separator: ";").first.map { String($0).trimmingSpaces().lowercased() } ?? ""
        return media == "application/json" || media.hasSuffix("+json")
    }

    private func checkAPIKeyHeader(_ template: StubTemplate, _ source: Source, reported: inout Set<String>) -> Bool {
        guard let apiKeyHeader else { return true }
        for case .header(let name) in template.parts where name.equalsIgnoringASCIICase(apiKeyHeader) {
            report(source, "{{header.\(name)}}: the API-key header (clients.api_keys.header) never reaches an upstream",
                   reported: &reported)
            return false
        }
        return true
    }

    /// Reports once per place and reason (an inherited template is compiled for every response that inherits it).
    private func report(_ source: Source, _ reason: String, reported: inout Set<String>) {
        guard reported.insert("\(source.line)\u{0}\(source.path)\u{0}\(reason)").inserted else { return }
        reader.report(line: source.line, source.path, reason)
    }

    // MARK: headers

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

    /// Where each field of a `headers` mapping was written (read without reporting: it was parsed already).
    func headerSources(_ entry: YAMLReader.Entry?) -> [Source] {
        guard let entry, case .mapping(let mapping) = entry.value else { return [] }
        return mapping.map { key, value in
            Source(line: reader.line(of: value, fallback: entry.keyLine),
                   path: YAMLReader.join(entry.path, key.scalar?.string ?? ""))
        }
    }

    // MARK: match

    func stubMatch(_ entry: YAMLReader.Entry) -> StubMatchConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: [
            "methods", "path", "path_prefix", "path_params", "query", "headers", "json",
        ]) else { return nil }
        var match = StubMatchConfig()
        var ok = true
        let kinds = ["path", "path_prefix", "path_params"].filter { map.has($0) }
        if kinds.count > 1 {
            reader.report(line: map.line, entry.path,
                          "use only one of path, path_prefix and path_params (found \(kinds.joined(separator: ", ")))")
            ok = false
        }
        if let item = map["path"] {
            if let value = routePath(item, stripTrailingSlash: false) { match.path = value } else { ok = false }
        }
        if let item = map["path_prefix"] {
            if let value = routePath(item, stripTrailingSlash: true) { match.pathPrefix = value } else { ok = false }
        }
        if let item = map["path_params"] {
            if let value = templatePath(item), validateTemplate(value, item) {
                match.pathParams = value
            } else {
                ok = false
            }
        }
        if let item = map["methods"] {
            if let values = reader.list(item, allowSingle: true), !values.isEmpty {
                var methods: [HTTPMethod] = []
                for (index, value) in values.enumerated() {
                    if !value.text.isEmpty,
                       value.text.allSatisfy({ $0.isASCII && ($0.isUppercase || $0 == "-" || $0 == "_") }) {
                        if !methods.contains(HTTPMethod(value.text)) { methods.append(HTTPMethod(value.text)) }
                    } else {
                        reader.report(line: value.line, "\(item.path)[\(index)]",
                                      "invalid method \(value.shown) (methods are case-sensitive upper-case tokens, e.g. GET)")
                        ok = false
                    }
                }
                match.methods = methods
            } else {
                if case .sequence(let items) = item.value, items.isEmpty {
                    reader.report(line: reader.line(of: item.value), item.path,
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
                        reader.report(line: pair.source.line, pair.source.path,
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
                        reader.report(line: field.keyLine, field.path,
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
                   value.text.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true {
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

    // MARK: faults

    /// `faults`: a list of `{ type, rate, mode, duration }` (a single mapping is accepted).
    func stubFaults(_ entry: YAMLReader.Entry) -> [StubFaultConfig]? {
        let nodes: [Node]
        switch entry.value {
        case .sequence(let sequence): nodes = Array(sequence)
        case .mapping: nodes = [entry.value]
        default:
            reader.report(line: reader.line(of: entry.value), entry.path,
                          "expected a list of faults, got \(YAMLReader.kindName(entry.value))")
            return nil
        }
        var faults: [StubFaultConfig] = []
        var ok = true
        let kinds = StubFaultConfig.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        for (index, node) in nodes.enumerated() {
            let path = entry.value.isSequence ? "\(entry.path)[\(index)]" : entry.path
            guard let map = reader.mapping(node, path, allowed: ["type", "rate", "mode", "duration"]) else {
                ok = false
                continue
            }
            var kind: StubFaultConfig.Kind?
            if let item = reader.requireKey(map, "type"), let value = reader.scalar(item.value, item.path) {
                kind = StubFaultConfig.Kind(rawValue: value.text)
                if kind == nil { reader.report(line: value.line, item.path, "invalid fault type \(value.shown) (\(kinds))") }
            }
            let rate = reader.requireKey(map, "rate").flatMap { reader.double($0, in: 0...1) }
            var mode = StubFaultConfig.Mode.client
            if let item = map["mode"], let value = reader.scalar(item.value, item.path) {
                if let parsed = StubFaultConfig.Mode(rawValue: value.text) {
                    mode = parsed
                } else {
                    reader.report(line: value.line, item.path, "invalid mode \(value.shown) (client or upstream)")
                    ok = false
                }
            }
            var duration: Duration?
            if let item = map["duration"] {
                if kind != nil && kind != .slowBody {
                    reader.report(line: item.keyLine, item.path, "only slow_body takes a duration")
                    ok = false
                } else if let value = reader.duration(item) {
                    if value > .seconds(600) {
                        reader.report(line: item.keyLine, item.path, "must be at most 10m")
                        ok = false
                    }
                    duration = value
                } else {
                    ok = false
                }
            } else if kind == .slowBody {
                reader.report(line: map.line, YAMLReader.join(path, "duration"), "required key is missing for slow_body")
                ok = false
            }
            guard let kind, let rate else {
                ok = false
                continue
            }
            faults.append(StubFaultConfig(kind: kind, rate: rate, mode: mode, duration: duration))
        }
        return ok ? faults : nil
    }

    // MARK: routes

    /// A coalesced route cannot use a stub whose answers may fail the client's connection: its answer is shared by
    /// every caller of a flight, and a fault acts on one connection.
    func reportCoalescedStubFaults(_ config: GatewayConfig, routes entry: YAMLReader.Entry) {
        guard case .sequence(let sequence) = entry.value else { return }
        for (index, node) in sequence.enumerated() {
            guard case .mapping(let mapping) = node,
                  let coalesceKey = mapping.keys.first(where: { $0.scalar?.string == "coalesce" }),
                  let coalesce = mapping[coalesceKey], ["true", "True", "TRUE"].contains(coalesce.scalar?.string ?? ""),
                  let upstreamNode = mapping.first(where: { $0.key.scalar?.string == "upstream" })?.value,
                  let name = upstreamNode.scalar?.string,
                  let stub = config.upstream(named: name)?.stub,
                  let place = Self.clientFault(in: stub) else { continue }
            reader.report(line: reader.line(of: coalesce, fallback: reader.line(of: node)), "routes[\(index)].coalesce",
                          "a coalesced route shares one answer among its callers, so it cannot use a stub with faults that act on the client's connection (upstreams.\(name).stub\(place)); give them mode: upstream, or set coalesce: false")
        }
    }

    /// Where a stub has a fault with `mode: client` (`.faults`, `.responses[2].faults`), if anywhere.
    static func clientFault(in stub: StubConfig) -> String? {
        func has(_ faults: [StubFaultConfig]) -> Bool { faults.contains { $0.mode == .client && $0.rate > 0 } }
        if has(stub.faults) { return ".faults" }
        for (index, response) in stub.responses.enumerated() where response.answers.contains(where: { has($0.faults) }) {
            return ".responses[\(index)].faults"
        }
        return nil
    }
}

private extension Node {
    var isSequence: Bool {
        if case .sequence = self { return true }
        return false
    }
}
