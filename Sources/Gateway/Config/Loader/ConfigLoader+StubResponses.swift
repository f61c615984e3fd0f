import HTTPWire
import Yams

/// A stub's `responses`: each response's match, its answer or `sequence` of answers, and what each level
/// inherits from the one above it.
extension Builder {
    func stubResponses(
        _ entry: YAMLReader.Entry, inheriting inherited: ResolvedAnswer,
        reported: inout Set<String>
    ) -> [StubResponseConfig]? {
        guard case .sequence(let sequence) = entry.value else {
            reader.report(
                line: reader.line(of: entry.value), entry.path,
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
                    reader.report(
                        line: reader.line(of: item.value), item.path, "expected a list of one or more answers")
                    ok = false
                    continue
                }
                var answers: [StubAnswerConfig] = []
                for (stepIndex, stepNode) in steps.enumerated() {
                    let stepPath = "\(item.path)[\(stepIndex)]"
                    guard let stepMap = reader.mapping(stepNode, stepPath, allowed: Self.answerKeys),
                        let stepKeys = answerKeys(stepMap, path: stepPath)
                    else {
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
            reader.report(
                line: map.line, path,
                "use only one of body, body_file and body_bytes (found \(bodySources.joined(separator: ", ")))")
            ok = false
        } else if let item = map["body"] ?? map["body_file"] ?? map["body_bytes"] {
            let (body, valid) = answerBody(item)
            keys.body = body
            if !valid { ok = false }
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

    // MARK: header sources

    /// Where each field of a `headers` mapping was written (read without reporting: it was parsed already).
    func headerSources(_ entry: YAMLReader.Entry?) -> [Source] {
        guard let entry, case .mapping(let mapping) = entry.value else { return [] }
        return mapping.map { key, value in
            Source(
                line: reader.line(of: value, fallback: entry.keyLine),
                path: YAMLReader.join(entry.path, key.scalar?.string ?? ""))
        }
    }
}
