import Foundation
import Yams

/// A scalar after `${NAME}` and `${file:PATH}` interpolation.
struct ScalarValue {
    var text: String
    /// Whether any part came from the environment or a secret file: such a value is never printed in a message.
    var fromEnvironment: Bool
    var line: Int
    /// Whether a part came from a secret file (`${file:PATH}`).
    var fromSecretFile = false

    /// `'text'` for messages (its first 80 characters, then `…`), or a neutral phrase when the value came from the
    /// environment or a secret file.
    var shown: String {
        if fromSecretFile { return "a value from a secret file" }
        if fromEnvironment { return "a value from the environment" }
        return text.count > 80 ? "'\(text.prefix(80))…'" : "'\(text)'"
    }

    /// `reason` (which may quote part of the URL) for a value that may be named, else one that says only what kind of
    /// value was refused and what was expected.
    func hidingReason(_ reason: String) -> String {
        fromEnvironment || fromSecretFile ? "\(shown) that is not of the form http(s)://host[:port][/path]" : reason
    }
}

/// Walks a composed YAML tree, collecting every problem with its line and key path.
final class YAMLReader {
    let file: String
    let environment: [String: String]
    /// Reads a secret file (`${file:PATH}`), its path already resolved.
    private let readFile: (String) -> [UInt8]?
    private(set) var problems: [ConfigProblem] = []

    /// The largest secret file read for `${file:PATH}`.
    static let maxSecretFileBytes = 64 * 1024

    /// The configuration file's directory, against which relative paths are resolved ("." for the working one).
    private let baseDirectory: String

    init(file: String, environment: [String: String], readFile: @escaping (String) -> [UInt8]? = { _ in nil }) {
        self.file = file
        self.environment = environment
        self.readFile = readFile
        let directory = (file as NSString).deletingLastPathComponent
        baseDirectory = directory.isEmpty ? "." : directory
    }

    /// `path` resolved against the configuration file's directory (an absolute path as it is).
    func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (baseDirectory == "." ? path : baseDirectory + "/" + path)
    }

    func report(line: Int, _ path: String, _ reason: String) {
        problems.append(
            ConfigProblem(
                file: file, line: max(1, line), keyPath: path.isEmpty ? "(root)" : path,
                reason: reason))
    }

    func line(of node: Node, fallback: Int = 1) -> Int { node.mark?.line ?? fallback }

    static func isNull(_ node: Node) -> Bool {
        guard case .scalar(let scalar) = node, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    static func kindName(_ node: Node) -> String {
        switch node {
        case .scalar: return "a scalar"
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }

    // MARK: mappings

    /// The entries of a mapping with string keys, checked against `allowed` (nil = any key). Reports a wrong node kind
    /// and unknown keys; returns nil when the node is not a mapping.
    func mapping(_ node: Node, _ path: String, allowed: [String]?) -> Entries? {
        guard case .mapping(let mapping) = node else {
            report(line: line(of: node), path, "expected a mapping, got \(YAMLReader.kindName(node))")
            return nil
        }
        var entries = Entries(path: path, line: mapping.mark?.line ?? 1)
        for (keyNode, value) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                report(line: line(of: keyNode, fallback: entries.line), path, "mapping keys must be strings")
                continue
            }
            let key = keyScalar.string
            let childPath = YAMLReader.join(path, key)
            if let allowed, !allowed.contains(key) {
                report(
                    line: line(of: keyNode, fallback: entries.line), childPath,
                    "unknown key (expected one of: \(allowed.joined(separator: ", ")))")
                continue
            }
            entries.items.append(
                Entry(
                    key: key, keyLine: line(of: keyNode, fallback: entries.line), value: value,
                    path: childPath))
        }
        return entries
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    struct Entry {
        var key: String
        var keyLine: Int
        var value: Node
        var path: String
        var isNull: Bool { YAMLReader.isNull(value) }
    }

    struct Entries {
        var path: String
        var line: Int
        var items: [Entry] = []

        /// The entry for `key` unless absent or null.
        subscript(key: String) -> Entry? {
            items.first { $0.key == key && !$0.isNull }
        }

        func has(_ key: String) -> Bool { self[key] != nil }
    }

    /// Reports a missing required key at the mapping's line.
    func requireKey(_ entries: Entries, _ key: String) -> Entry? {
        if let entry = entries[key] { return entry }
        report(line: entries.line, YAMLReader.join(entries.path, key), "required key is missing")
        return nil
    }

    // MARK: scalars

    /// The interpolated string of a scalar; reports a non-scalar or an unset variable.
    func scalar(_ node: Node, _ path: String) -> ScalarValue? {
        guard case .scalar(let scalar) = node else {
            report(line: line(of: node), path, "expected a scalar, got \(YAMLReader.kindName(node))")
            return nil
        }
        let nodeLine = scalar.mark?.line ?? 1
        return interpolate(scalar.string, line: nodeLine, path: path)
    }

    /// Replaces `${NAME}` from the environment and `${file:PATH}` with the contents of the file at `PATH` (relative to
    /// the configuration file's directory; trailing line breaks dropped); `$${` is a literal `${`.
    func interpolate(_ text: String, line: Int, path: String) -> ScalarValue? {
        guard text.contains("$") else { return ScalarValue(text: text, fromEnvironment: false, line: line) }
        var output = ""
        var fromEnvironment = false
        var fromSecretFile = false
        var failed = false
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            output += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("${") {
                output += "${"
                rest = after.dropFirst(2)
                continue
            }
            guard after.hasPrefix("{") else {
                output += "$"
                rest = after
                continue
            }
            guard let close = after.firstIndex(of: "}") else {
                report(line: line, path, "unterminated '${' in value")
                return nil
            }
            let name = after[after.index(after: after.startIndex)..<close]
            rest = after[after.index(after: close)...]
            if name.hasPrefix("file:") {
                switch secretFile(String(name.dropFirst("file:".count))) {
                case .success(let contents):
                    output += contents
                    fromEnvironment = true
                    fromSecretFile = true
                case .failure(let problem):
                    report(line: line, path, problem.reason)
                    failed = true
                }
                continue
            }
            guard YAMLReader.isVariableName(name) else {
                report(line: line, path, "invalid environment variable name in '${...}'")
                failed = true
                continue
            }
            guard let value = environment[String(name)] else {
                report(line: line, path, "environment variable \(name) is not set")
                failed = true
                continue
            }
            output += value
            fromEnvironment = true
        }
        output += rest
        return failed
            ? nil
            : ScalarValue(
                text: output, fromEnvironment: fromEnvironment, line: line,
                fromSecretFile: fromSecretFile)
    }

    /// Why a secret file could not be used (its path is named, never its contents).
    struct SecretFileProblem: Error {
        var reason: String
    }

    /// The contents of the secret file at `path` (resolved against the configuration file's directory), without
    /// trailing line breaks: what `echo token > file` and mounted secrets both give as the token.
    private func secretFile(_ path: String) -> Result<String, SecretFileProblem> {
        guard !path.isEmpty else { return .failure(SecretFileProblem(reason: "empty path in '${file:...}'")) }
        let resolved = resolve(path)
        guard let bytes = readFile(resolved) else {
            return .failure(SecretFileProblem(reason: "cannot read the secret file \(resolved)"))
        }
        guard bytes.count <= YAMLReader.maxSecretFileBytes else {
            return .failure(SecretFileProblem(reason: "the secret file \(resolved) is larger than 64 KiB"))
        }
        guard var text = String(validating: bytes, as: UTF8.self) else {
            return .failure(SecretFileProblem(reason: "the secret file \(resolved) is not valid UTF-8"))
        }
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        return .success(text)
    }

    static func isVariableName(_ name: Substring) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter || first == "_" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }

    /// A non-empty scalar with where it came from, for values a message may name (``ScalarValue/shown``).
    func nonEmptyScalar(_ entry: Entry) -> ScalarValue? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        if value.text.isEmpty {
            report(line: value.line, entry.path, "must not be empty")
            return nil
        }
        return value
    }

    func string(_ entry: Entry, nonEmpty: Bool = true) -> String? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        if nonEmpty && value.text.isEmpty {
            report(line: value.line, entry.path, "must not be empty")
            return nil
        }
        return value.text
    }

    func bool(_ entry: Entry) -> Bool? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        switch value.text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default:
            report(line: value.line, entry.path, "expected true or false, got \(value.shown)")
            return nil
        }
    }

    func int(_ entry: Entry, in range: ClosedRange<Int>) -> Int? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        guard let number = Int(value.text.trimmingSpaces()) else {
            report(line: value.line, entry.path, "expected an integer, got \(value.shown)")
            return nil
        }
        guard range.contains(number) else {
            report(line: value.line, entry.path, "must be between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return number
    }

    func double(_ entry: Entry, in range: ClosedRange<Double>) -> Double? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        guard let number = Double(value.text.trimmingSpaces()), number.isFinite else {
            report(line: value.line, entry.path, "expected a number, got \(value.shown)")
            return nil
        }
        guard range.contains(number) else {
            report(line: value.line, entry.path, "must be between \(range.lowerBound) and \(range.upperBound)")
            return nil
        }
        return number
    }

    /// A duration (`ms`, `s`, `m`); must be > 0 unless `allowZero`.
    func duration(_ entry: Entry, allowZero: Bool = false) -> Duration? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        guard let duration = ConfigValue.parseDuration(value.text) else {
            report(
                line: value.line, entry.path,
                "invalid duration \(value.shown) (use a number with ms, s or m, e.g. 250ms, 10s, 2m)")
            return nil
        }
        if duration == .zero && !allowZero {
            report(line: value.line, entry.path, "must be greater than 0")
            return nil
        }
        return duration
    }

    /// A size (plain bytes, `KiB`, `MiB`); must be > 0 unless `allowZero`.
    func size(_ entry: Entry, allowZero: Bool = false) -> Int64? {
        guard let value = scalar(entry.value, entry.path) else { return nil }
        guard let size = ConfigValue.parseSize(value.text) else {
            report(
                line: value.line, entry.path, "invalid size \(value.shown) (use bytes, KiB or MiB, e.g. 16384, 10MiB)")
            return nil
        }
        if size == 0 && !allowZero {
            report(line: value.line, entry.path, "must be greater than 0")
            return nil
        }
        return size
    }

    /// A list of scalars (a single scalar counts as a one-element list when `allowSingle`).
    func list(_ entry: Entry, allowSingle: Bool = false) -> [ScalarValue]? {
        let items: [Node]
        switch entry.value {
        case .sequence(let sequence): items = Array(sequence)
        case .scalar where allowSingle: items = [entry.value]
        default:
            report(line: line(of: entry.value), entry.path, "expected a list, got \(YAMLReader.kindName(entry.value))")
            return nil
        }
        var result: [ScalarValue] = []
        var failed = false
        for (index, item) in items.enumerated() {
            if let value = scalar(item, "\(entry.path)[\(index)]") { result.append(value) } else { failed = true }
        }
        return failed ? nil : result
    }

    /// A mapping of string keys to scalar values, in order.
    func stringMap(_ entry: Entry) -> [(key: String, value: ScalarValue, path: String)]? {
        guard let entries = mapping(entry.value, entry.path, allowed: nil) else { return nil }
        var result: [(key: String, value: ScalarValue, path: String)] = []
        var failed = false
        for item in entries.items {
            if let value = scalar(item.value, item.path) {
                result.append((item.key, value, item.path))
            } else {
                failed = true
            }
        }
        return failed ? nil : result
    }
}
