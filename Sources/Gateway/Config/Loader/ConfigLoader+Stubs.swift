import HTTPWire
import Yams

/// An upstream's `stub`: its default answer (status, headers, body, delay or latency, errors), then its `faults`,
/// `template`, `seed` and `responses` (read in ConfigLoader+StubResponses, +StubMatch and +StubFaults), and the
/// templates of every answer (ConfigLoader+StubTemplates), compiled here once (a problem in one is reported with
/// its key path and line, as any other).
extension Builder {
    func stub(_ entry: YAMLReader.Entry) -> StubConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: [
                    "status", "headers", "body", "body_file", "body_bytes", "delay", "latency", "error_rate",
                    "error_status",
                    "faults", "template", "seed", "responses"
                ])
        else { return nil }
        var stub = StubConfig()
        var ok = true
        if let item = map["status"] {
            if let value = reader.int(item, in: 200...599) { stub.status = value } else { ok = false }
        }
        if let item = map["headers"] {
            if let headers = headers(item) { stub.headers = headers } else { ok = false }
        }
        let bodySources = ["body", "body_file", "body_bytes"].filter { map.has($0) }
        if bodySources.count > 1 {
            reader.report(
                line: map.line, entry.path,
                "use only one of body, body_file and body_bytes (found \(bodySources.joined(separator: ", ")))")
            ok = false
        }
        // Each source is read, even past a conflict, for its own problems.
        for item in bodySources.compactMap({ map[$0] }) {
            let (body, valid) = answerBody(item)
            if let body {
                stub.body = body.bytes
                if let file = body.file { stub.bodyFile = file }
                if let generated = body.generated { stub.bodyBytes = generated }
            }
            if !valid { ok = false }
        }
        if let item = map["delay"] {
            if let value = reader.duration(item, allowZero: true) { stub.delay = value } else { ok = false }
        }
        if let item = map["latency"] {
            if map.has("delay") {
                reader.report(line: item.keyLine, item.path, "use either delay or latency, not both")
                ok = false
            }
            if let latency = latency(item) { stub.latency = latency } else { ok = false }
        }
        if let item = map["error_rate"] {
            if let value = reader.double(item, in: 0...1) { stub.errorRate = value } else { ok = false }
        }
        if let item = map["error_status"] {
            if let value = reader.int(item, in: 400...599) { stub.errorStatus = value } else { ok = false }
        }
        if !stubAnswers(map, entry, into: &stub) { ok = false }
        return ok ? stub : nil
    }

    func latency(_ entry: YAMLReader.Entry) -> StubLatencyConfig? {
        guard
            let map = reader.mapping(
                entry.value, entry.path,
                allowed: ["distribution", "min", "max", "mean", "stddev", "median", "sigma"])
        else { return nil }
        guard let kindEntry = reader.requireKey(map, "distribution"),
            let kind = reader.scalar(kindEntry.value, kindEntry.path)
        else { return nil }
        func value(_ key: String, required: Bool) -> (Duration?, Bool) {
            if let item = map[key] {
                let parsed = reader.duration(item, allowZero: true)
                return (parsed, parsed != nil)
            }
            if required {
                reader.report(
                    line: map.line, YAMLReader.join(entry.path, key),
                    "required key is missing for distribution: \(kind.text)")
                return (nil, false)
            }
            return (nil, true)
        }
        func unused(_ keys: [String]) -> Bool {
            var ok = true
            for key in keys {
                if let item = map[key] {
                    reader.report(line: item.keyLine, item.path, "not used by distribution: \(kind.text)")
                    ok = false
                }
            }
            return ok
        }
        switch kind.text {
        case "fixed":
            let (mean, ok) = value("mean", required: true)
            guard unused(["min", "max", "stddev", "median", "sigma"]), ok, let mean else { return nil }
            return .fixed(mean)
        case "uniform":
            let (min, ok1) = value("min", required: true)
            let (max, ok2) = value("max", required: true)
            guard unused(["mean", "stddev", "median", "sigma"]), ok1, ok2, let min, let max else { return nil }
            guard min <= max else {
                reader.report(line: map.line, YAMLReader.join(entry.path, "max"), "must not be less than min")
                return nil
            }
            return .uniform(min: min, max: max)
        case "normal":
            let (mean, ok1) = value("mean", required: true)
            let (stddev, ok2) = value("stddev", required: true)
            let (min, ok3) = value("min", required: false)
            let (max, ok4) = value("max", required: false)
            guard unused(["median", "sigma"]), ok1, ok2, ok3, ok4, let mean, let stddev else { return nil }
            if let min, let max, min > max {
                reader.report(line: map.line, YAMLReader.join(entry.path, "max"), "must not be less than min")
                return nil
            }
            return .normal(mean: mean, stddev: stddev, min: min, max: max)
        case "lognormal":
            let (median, ok1) = value("median", required: true)
            var sigma: Double?
            if let item = map["sigma"] {
                sigma = reader.double(item, in: 0...10)
            } else {
                reader.report(
                    line: map.line, YAMLReader.join(entry.path, "sigma"),
                    "required key is missing for distribution: \(kind.text)")
            }
            let (min, ok3) = value("min", required: false)
            let (max, ok4) = value("max", required: false)
            guard unused(["mean", "stddev"]), ok1, ok3, ok4, let median, let sigma else { return nil }
            if let min, let max, min > max {
                reader.report(line: map.line, YAMLReader.join(entry.path, "max"), "must not be less than min")
                return nil
            }
            return .lognormal(median: median, sigma: sigma, min: min, max: max)
        default:
            reader.report(
                line: kind.line, kindEntry.path,
                "invalid distribution \(kind.shown) (fixed, uniform, normal or lognormal)")
            return nil
        }
    }

    /// An answer's body from `body`, `body_file` (read now) or `body_bytes` (generated now), whichever `item` is: the
    /// bytes, the resolved file, the generated count and where it was written. `valid` is false when a problem was
    /// reported.
    func answerBody(_ item: YAMLReader.Entry) -> (body: AnswerBody?, valid: Bool) {
        switch item.key {
        case "body":
            guard let value = reader.scalar(item.value, item.path) else { return (nil, true) }
            return ((Array(value.text.utf8), nil, nil, Source(line: value.line, path: item.path)), true)
        case "body_file":
            guard let value = reader.scalar(item.value, item.path) else { return (nil, true) }
            let resolved = resolve(value.text)
            if value.text.isEmpty {
                reader.report(line: value.line, item.path, "must not be empty")
                return (nil, false)
            }
            guard let bytes = loader.readFile(resolved) else {
                reader.report(
                    line: value.line, item.path,
                    value.fromEnvironment ? "cannot read the file" : "cannot read the file \(resolved)")
                return (nil, false)
            }
            return ((bytes, resolved, nil, Source(line: value.line, path: item.path)), true)
        default:
            guard let size = reader.size(item, allowZero: true) else { return (nil, false) }
            guard size <= 1 << 30 else {
                reader.report(line: reader.line(of: item.value), item.path, "must be at most 1GiB")
                return (nil, false)
            }
            return (
                (StubBody.generate(count: Int(size)), nil, Int(size), Source(line: item.keyLine, path: item.path)),
                true
            )
        }
    }

    /// A body as ``answerBody(_:)`` reads it.
    typealias AnswerBody = (bytes: [UInt8], file: String?, generated: Int?, source: Source)

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
        var body: AnswerBody?
        var delay: Duration?
        var latency: StubLatencyConfig?
        var errorRate: (value: Double, source: Source)?
        var errorStatus: Int?
        var faults: (value: [StubFaultConfig], source: Source)?
        var template: Bool?
    }

    static let answerKeys = [
        "status", "headers", "body", "body_file", "body_bytes", "delay", "latency", "error_rate",
        "error_status", "faults", "template"
    ]

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
            base.headerSources = Array(
                repeating: Source(line: map.line, path: YAMLReader.join(entry.path, "headers")),
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
}
