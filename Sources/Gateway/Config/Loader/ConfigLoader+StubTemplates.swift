import HTTPWire

/// The body and header templates of a stub's answers, compiled once at load.
extension Builder {
    /// Compiles the answer's body and header templates (unless `template: false` or a generated body).
    func compileTemplates(_ resolved: inout ResolvedAnswer, parameterNames: [String], reported: inout Set<String>)
        -> Bool
    {
        guard resolved.template else { return true }
        var ok = true
        let isJSON = resolved.answer.headers.first(name: "Content-Type").map(Self.isJSONType) ?? false
        if resolved.answer.bodyBytes == nil, let source = resolved.bodySource {
            do {
                resolved.answer.bodyTemplate = try StubTemplate.compile(
                    resolved.answer.body, parameterNames: parameterNames,
                    escaping: isJSON ? .json : .none)
                if let template = resolved.answer.bodyTemplate,
                    !checkAPIKeyHeader(template, source, reported: &reported)
                {
                    ok = false
                }
            } catch {
                report(source, error.description, reported: &reported)
                ok = false
            }
        }
        var templates: [StubHeaderTemplate] = []
        for (index, field) in resolved.answer.headers.enumerated() {
            let source =
                resolved.headerSources.indices.contains(index)
                ? resolved.headerSources[index] : Source(line: 1, path: "headers")
            do {
                if let template = try StubTemplate.compile(
                    Array(field.value.utf8), parameterNames: parameterNames,
                    escaping: .header)
                {
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

    func checkAPIKeyHeader(_ template: StubTemplate, _ source: Source, reported: inout Set<String>) -> Bool {
        guard let apiKeyHeader else { return true }
        for case .header(let name) in template.parts where name.equalsIgnoringASCIICase(apiKeyHeader) {
            report(
                source, "{{header.\(name)}}: the API-key header (clients.api_keys.header) never reaches an upstream",
                reported: &reported)
            return false
        }
        return true
    }

    /// Reports once per place and reason (an inherited template is compiled for every response that inherits it).
    func report(_ source: Source, _ reason: String, reported: inout Set<String>) {
        guard reported.insert("\(source.line)\u{0}\(source.path)\u{0}\(reason)").inserted else { return }
        reader.report(line: source.line, source.path, reason)
    }
}
