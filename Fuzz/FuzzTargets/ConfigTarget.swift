import Gateway
import HTTPWire

/// `config`: YAML text through `ConfigLoader` (Yams, then every key's rules), hermetic (``HermeticConfig``).
///
/// Checked: a refused file has problems, each `FILE:LINE: key.path: reason` on one line (no control characters), its
/// line within the file, and none shows a value from the environment or a secret file; an accepted one compiles
/// into a route table with every route, prints as the `routes` table, and every route is reached by a request for its
/// own path (its host and an allowed method): no route the loader accepts can be dead or shadowed unseen.
///
/// Inputs naming a large generated stub body (`body_bytes`) are skipped unless the value is a short number: the
/// loader builds such a body (up to 1 GiB, which it allows) and the fuzzer would spend its time there.
enum ConfigTarget {
    static let target = FuzzTarget(
        name: "config",
        summary: "configuration loader: located one-line problems, no secrets in messages, accepted routes reachable",
        maxLength: 4096, dictionary: "yaml.dict", run: run)

    static func run(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        guard !buildsLargeBody(text) else { return }
        switch HermeticConfig.load(text) {
        case .failure(let errors):
            try checkProblems(errors, text: text)
        case .success(let config):
            try checkAccepted(config)
            guard case .success(let again) = HermeticConfig.load(text), again == config else {
                throw failure("loading the same text again gives another result")
            }
        }
    }

    static func checkProblems(_ errors: ConfigErrors, text: String) throws(FuzzFailure) {
        try check(!errors.problems.isEmpty, "refused without a problem")
        let lines = yamlLineCount(text)
        // Compared without case: a value may be shown lower-cased (a base_url's scheme was).
        let lowerText = FuzzBytes.asciiLowercased(text)
        let environmentSecret = FuzzBytes.asciiLowercased(HermeticConfig.environmentSecret)
        let fileSecret = FuzzBytes.asciiLowercased(HermeticConfig.fileSecret)
        let mayShowEnvironmentSecret = FuzzBytes.contains(lowerText, environmentSecret)
        let mayShowFileSecret = FuzzBytes.contains(lowerText, fileSecret)
        for problem in errors.problems {
            let line = problem.description
            let lowerLine = FuzzBytes.asciiLowercased(line)
            try check(problem.file == HermeticConfig.path, "problem in another file: \(line)")
            try check(problem.line >= 1 && problem.line <= lines + 1, "line \(problem.line) of \(lines): \(line)")
            try check(!problem.keyPath.isEmpty, "a problem without key path: \(line)")
            try check(
                !line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                "control characters in \(line.debugDescription)")
            try check(
                mayShowEnvironmentSecret || !FuzzBytes.contains(lowerLine, environmentSecret),
                "a value from the environment in \(line)")
            try check(
                mayShowFileSecret || !FuzzBytes.contains(lowerLine, fileSecret),
                "a value from a secret file in \(line)")
        }
    }

    static func checkAccepted(_ config: GatewayConfig) throws(FuzzFailure) {
        let table = RouteTable(config: config)
        try check(table.routes.count == config.routes.count, "routes without their upstream")
        try check(RouteTableFormatter.rows(table).count == config.routes.count, "the routes table lost rows")
        _ = RouteTableFormatter.format(table)
        for route in table.routes {
            let method = route.config.match.methods?.first ?? .get
            let target: String
            switch route.kind {
            case .exact(let path): target = path
            case .prefix(let prefix): target = prefix
            case .template(let segments):
                target = segments.isEmpty ? "/" : "/" + segments.map { $0 ?? "p" }.joined(separator: "/")
            }
            let result = table.route(method: method, host: route.config.match.host, target: target)
            guard case .matched = result else {
                throw failure("route \(route.name) is not reached by \(method) \(target): \(result)")
            }
        }
    }

    /// The lines of `text` as YAML counts them: CR LF, CR, LF, NEL, LS and PS each end one.
    static func yamlLineCount(_ text: String) -> Int {
        var lines = 1
        var previousCR = false
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": if !previousCR { lines += 1 }
            case "\r", "\u{85}", "\u{2028}", "\u{2029}": lines += 1
            default: break
            }
            previousCR = scalar == "\r"
        }
        return lines
    }

    /// Whether `text` names `body_bytes` with anything but a short plain number (a few KB at most). `max_body_bytes`
    /// is another key.
    static func buildsLargeBody(_ text: String) -> Bool {
        var rest = Substring(text)
        while let found = rest.range(of: "body_bytes") {
            if let before = rest[..<found.lowerBound].last, before.isLetter || before.isNumber || before == "_" {
                rest = rest[found.upperBound...]
                continue
            }
            var value = rest[found.upperBound...].drop { $0 == "\"" || $0 == "'" || $0 == " " }
            guard value.first == ":" else { return true }
            value = value.dropFirst().drop { $0 == " " }
            let digits = value.prefix { $0.isASCII && $0.isNumber }
            guard digits.count <= 4, value.dropFirst(digits.count).first.map({ " ,}\n\r#".contains($0) }) ?? true else {
                return true
            }
            rest = rest[found.upperBound...]
        }
        return false
    }
}
