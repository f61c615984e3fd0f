import Foundation
import Yams

/// Writes what an ``ExchangeRecorder`` kept as a directory `moya-gateway check` accepts and `serve` replays with no
/// network:
///
/// - `gateway.yaml`: the recorded configuration, key for key, except that every upstream that had a `base_url` is a
///   stub whose `responses` are the recorded exchanges (most specific match first), each with its status, headers,
///   body file and a log-normal latency fitted to the observed times; keys a stub cannot have or does not need
///   (`base_url`, `servers`, `access_token`, `credentials`, `headers`, `health_check`, `tls`, `pool`, `timeout`)
///   are left out, and so is `websocket` on routes. `${NAME}` references stay as they were (their values are never
///   written); an API key written literally in the file is replaced by a reference to `MOYA_GATEWAY_KEY_<CLIENT>`.
///   Relative file paths are made absolute, since the recording lives elsewhere.
/// - `stubs/UPSTREAM/NNNN-METHOD-PATH.EXT`: one body per exchange, decoded, used with `template: false`.
/// - `recording.json`: an index of the exchanges (counts, medians, which bodies were gzip-encoded upstream).
package enum RecordingWriter {
    /// What was written, for the summary `record` prints at exit.
    package struct Summary: Sendable, CustomStringConvertible {
        package var directory: String
        package var exchanges: Int
        package var requests: Int
        package var bodyBytes: Int
        package var perUpstream: [(name: String, exchanges: Int)]
        package var skipped: [(reason: String, count: Int)]
        package var decoded: Int
        package var notes: [String]

        package var description: String {
            var lines = [
                "record: wrote \(directory)/gateway.yaml: \(exchanges) distinct exchanges (\(bodyBytes) body bytes) from \(requests) recorded requests"
            ]
            for upstream in perUpstream {
                lines.append("record:   upstream \(upstream.name): \(upstream.exchanges) exchanges")
            }
            let skippedTotal = skipped.reduce(0) { $0 + $1.count }
            if skippedTotal == 0 {
                lines.append("record: not recorded: none")
            } else {
                lines.append(
                    "record: not recorded: \(skippedTotal) ("
                        + skipped.map { "\($0.count) \($0.reason)" }.joined(separator: ", ") + ")")
            }
            if decoded > 0 {
                lines.append(
                    "record: \(decoded) bodies came gzip- or deflate-encoded and are stored decoded (see recording.json)"
                )
            }
            lines += notes.map { "record: note: \($0)" }
            return lines.joined(separator: "\n")
        }
    }

    /// A problem writing the recording.
    package struct WriteError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Makes `directory` (and its parents), which must not hold a recording or anything else yet.
    package static func prepare(_ directory: String) throws(WriteError) {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw WriteError(description: "\(directory) exists and is not a directory")
            }
            let contents = (try? manager.contentsOfDirectory(atPath: directory)) ?? []
            guard contents.isEmpty else {
                throw WriteError(description: "\(directory) is not empty: record into a new or empty directory")
            }
            guard manager.isWritableFile(atPath: directory) else {
                throw WriteError(description: "\(directory) is not writable")
            }
            return
        }
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw WriteError(description: "cannot create \(directory): \(error.localizedDescription)")
        }
    }

    /// Writes the recording of `recorder` for the configuration loaded from `configPath` into `directory`.
    package static func write(
        _ recorder: ExchangeRecorder, configPath: String, config: GatewayConfig,
        to directory: String
    ) throws(WriteError) -> Summary {
        let (entries, observed, skipped, bodyBytes) = recorder.snapshot()
        guard let text = try? String(contentsOfFile: configPath, encoding: .utf8),
            let root = (try? Yams.compose(yaml: text)) ?? nil, case .mapping(let top) = root
        else {
            throw WriteError(description: "cannot read the configuration \(configPath) again to write the recording")
        }
        let sourceDirectory = absoluteDirectory(of: configPath)
        var summary = Summary(
            directory: directory, exchanges: entries.count, requests: observed, bodyBytes: bodyBytes,
            perUpstream: [],
            skipped: ExchangeRecorder.Skip.allCases.compactMap { reason in
                skipped[reason].map { (reason.rawValue, $0) }
            }, decoded: entries.filter { $0.decodedFrom != nil }.count, notes: [])
        var files: [(path: String, bytes: [UInt8])] = []
        var index: [[String: Any]] = []
        var pairs: [(Node, Node)] = []
        for (key, value) in top {
            switch key.scalar?.string {
            case "upstreams":
                guard case .mapping(let upstreams) = value else {
                    pairs.append((key, value))
                    continue
                }
                var converted: [(Node, Node)] = []
                for (nameNode, upstreamNode) in upstreams {
                    let name = nameNode.scalar?.string ?? ""
                    guard let upstream = config.upstream(named: name), !upstream.isStub,
                        case .mapping(let original) = upstreamNode
                    else {
                        converted.append((nameNode, absolutized(upstreamNode, from: sourceDirectory)))
                        continue
                    }
                    let recorded = entries.filter { $0.upstream == name }
                    summary.perUpstream.append((name, recorded.count))
                    var responses: [Node] = []
                    // The most specific match first, so that a request with more conditions is not taken by one with
                    // fewer (a request matches a response whose conditions are a subset of its own).
                    let ordered = recorded.enumerated().sorted {
                        ($1.element.query.count + $1.element.varyHeaders.count, $0.offset)
                            < ($0.element.query.count + $0.element.varyHeaders.count, $1.offset)
                    }.map(\.element)
                    for entry in ordered {
                        let file =
                            "stubs/\(fileName(name))/\(String(format: "%04d", files.count + 1))-\(entry.method)-\(slug(entry.path)).\(fileExtension(entry.headers))"
                        files.append((file, entry.body))
                        let latency = fit(entry.durations)
                        responses.append(responseNode(entry, file: file, latency: latency))
                        var item: [String: Any] = [
                            "upstream": name, "method": entry.method, "path": entry.path,
                            "status": entry.status, "body_file": file, "count": entry.count,
                            "median_ms": latency.median * 1000, "sigma": latency.sigma
                        ]
                        if !entry.query.isEmpty {
                            item["query"] = entry.query.map { ["name": $0.name, "value": $0.value] }
                        }
                        if let coding = entry.decodedFrom { item["decoded_from"] = coding }
                        index.append(item)
                    }
                    let stub: [(Node, Node)] = [(plain("responses"), Node(responses, .implicit, .block))]
                    // Nothing recorded: no default answer either, so every request gets the JSON 404.
                    var kept: [(Node, Node)] = [(plain("stub"), Node(stub))]
                    for (field, fieldValue) in original
                    where ["validation", "circuit_breaker"].contains(field.scalar?.string ?? "") {
                        kept.append((field, fieldValue))
                    }
                    converted.append((nameNode, Node(kept)))
                }
                pairs.append((key, Node(converted)))
            case "routes":
                guard case .sequence(let routes) = value else {
                    pairs.append((key, value))
                    continue
                }
                let stripped: [Node] = routes.map { route in
                    guard case .mapping(let mapping) = route else { return route }
                    return Node(mapping.filter { $0.key.scalar?.string != "websocket" }.map { ($0.key, $0.value) })
                }
                pairs.append((key, Node(stripped)))
            case "clients":
                pairs.append((key, clientsWithoutLiteralKeys(value, notes: &summary.notes)))
            default:
                pairs.append((key, absolutized(value, from: sourceDirectory)))
            }
        }
        let header = """
            # Recorded by `moya-gateway record` from \(configPath): \(entries.count) exchanges from \(observed) requests.
            # Every upstream that had a base_url is a stub answering what it answered then (bodies in stubs/, sent as
            # they are: template: false), after a log-normal latency fitted to the observed times. Replay with
            #   moya-gateway serve --config \(directory)/gateway.yaml
            # ${NAME} references are kept as they were: set the same environment to check or serve this file.

            """
        let yaml: String
        do {
            yaml = try Yams.serialize(node: Node(pairs), width: -1)
        } catch {
            throw WriteError(description: "cannot write the recorded configuration: \(error)")
        }
        try writeFile("\(directory)/gateway.yaml", Array((header + yaml).utf8))
        for file in files { try writeFile("\(directory)/\(file.path)", file.bytes) }
        if let json = try? JSONSerialization.data(
            withJSONObject: ["exchanges": index], options: [.prettyPrinted, .sortedKeys])
        {
            try writeFile("\(directory)/recording.json", Array(json))
        }
        return summary
    }

    // MARK: Nodes

    private static func plain(_ text: String) -> Node { Node(text, .implicit, .plain) }

    /// A recorded value as a quoted scalar, its `${` escaped (the loader reads `${NAME}` in every scalar).
    private static func quoted(_ text: String) -> Node {
        Node(text.replacingOccurrences(of: "${", with: "$${"), .implicit, .doubleQuoted)
    }

    private static func responseNode(
        _ entry: ExchangeRecorder.Entry, file: String,
        latency: (median: Double, sigma: Double)
    ) -> Node {
        var match: [(Node, Node)] = [
            (plain("methods"), Node([plain(entry.method)], .implicit, .flow)),
            (plain("path"), quoted(entry.path))
        ]
        if !entry.query.isEmpty {
            var seen = Set<String>()
            let unique = entry.query.filter { seen.insert($0.name).inserted }
            match.append((plain("query"), Node(unique.map { (quoted($0.name), quoted($0.value)) })))
        }
        if !entry.varyHeaders.isEmpty {
            match.append((plain("headers"), Node(entry.varyHeaders.map { (plain($0.name), quoted($0.value)) })))
        }
        var response: [(Node, Node)] = [
            (plain("match"), Node(match, .implicit, .flow)),
            (plain("status"), plain(String(entry.status)))
        ]
        if !entry.headers.isEmpty {
            response.append((plain("headers"), Node(entry.headers.map { (plain($0.name), quoted($0.value)) })))
        }
        response.append((plain("body_file"), quoted(file)))
        response.append((plain("template"), plain("false")))
        response.append(
            (
                plain("latency"),
                Node(
                    [
                        (plain("distribution"), plain("lognormal")),
                        (plain("median"), plain(String(format: "%.3fms", latency.median * 1000))),
                        (plain("sigma"), plain(String(format: "%.4f", latency.sigma)))
                    ], .implicit, .flow)
            ))
        return Node(response)
    }

    /// A log-normal fit: the median is the geometric mean of the durations, sigma the standard deviation of their
    /// logarithms (0 for a single observation), at most 10.
    static func fit(_ durations: [Double]) -> (median: Double, sigma: Double) {
        let logs = durations.filter { $0 > 0 && $0.isFinite }.map { log($0) }
        guard !logs.isEmpty else { return (0, 0) }
        let mean = logs.reduce(0, +) / Double(logs.count)
        guard logs.count > 1 else { return (exp(mean), 0) }
        let variance = logs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(logs.count - 1)
        return (exp(mean), min(variance.squareRoot(), 10))
    }

    /// `clients` with each API key written literally in the file replaced by a `${MOYA_GATEWAY_KEY_<CLIENT>}`
    /// reference: a recording never holds a key.
    private static func clientsWithoutLiteralKeys(_ node: Node, notes: inout [String]) -> Node {
        guard case .mapping(var clients) = node, case .mapping(var apiKeys)? = clients["api_keys"],
            case .mapping(let keys)? = apiKeys["keys"]
        else { return node }
        var replaced: [(Node, Node)] = []
        for (name, value) in keys {
            let text = value.scalar?.string ?? ""
            if text.contains("${") {
                replaced.append((name, value))
            } else {
                let variable =
                    "MOYA_GATEWAY_KEY_"
                    + String((name.scalar?.string ?? "").uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
                replaced.append((name, Node("${\(variable)}", .implicit, .doubleQuoted)))
                notes.append(
                    "the API key of client '\(name.scalar?.string ?? "")' was written in the file; the recording refers to ${\(variable)} instead (set it to replay with that key)"
                )
            }
        }
        apiKeys["keys"] = Node(replaced)
        clients["api_keys"] = .mapping(apiKeys)
        return .mapping(clients)
    }

    /// `node` with relative file paths made absolute (against `directory`): `body_file`, `certificate`,
    /// `private_key`, `ca_file`, a file `output`, and every `${file:PATH}`.
    private static func absolutized(_ node: Node, from directory: String, key: String? = nil) -> Node {
        switch node {
        case .scalar(let scalar):
            var text = scalar.string
            if ["body_file", "certificate", "private_key", "ca_file"].contains(key ?? ""), !text.hasPrefix("/"),
                !text.contains("${")
            {
                text = directory + "/" + text
            } else if key == "output", !["stdout", "stderr"].contains(text), !text.hasPrefix("/"), !text.contains("${")
            {
                text = directory + "/" + text
            }
            if text.contains("${file:") {
                var output = ""
                var rest = Substring(text)
                while let range = rest.range(of: "${file:") {
                    output += rest[..<range.upperBound]
                    rest = rest[range.upperBound...]
                    if !rest.hasPrefix("/") { output += directory + "/" }
                }
                text = output + rest
            }
            guard text != scalar.string else { return node }
            return Node(text, .implicit, scalar.style == .plain ? .any : scalar.style)
        case .mapping(let mapping):
            return Node(
                mapping.map { ($0.key, absolutized($0.value, from: directory, key: $0.key.scalar?.string)) },
                .implicit, mapping.style)
        case .sequence(let sequence):
            return Node(sequence.map { absolutized($0, from: directory) }, .implicit, sequence.style)
        case .alias:
            return node
        }
    }

    private static func absoluteDirectory(of path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let base = directory.isEmpty ? "." : directory
        if base.hasPrefix("/") { return (base as NSString).standardizingPath }
        return ((FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(base) as NSString)
            .standardizingPath
    }

    private static func fileName(_ text: String) -> String {
        String(
            text.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") ? $0 : "_" })
    }

    private static func slug(_ path: String) -> String {
        let cleaned = path.split(separator: "/").joined(separator: "-")
        let safe = String(
            cleaned.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
        return safe.isEmpty ? "root" : String(safe.prefix(60))
    }

    private static func fileExtension(_ headers: [(name: String, value: String)]) -> String {
        let type = headers.first { $0.name.lowercased() == "content-type" }?.value.lowercased() ?? ""
        if type.contains("json") { return "json" }
        if type.contains("html") { return "html" }
        if type.contains("xml") { return "xml" }
        if type.hasPrefix("text/") { return "txt" }
        return "bin"
    }

    private static func writeFile(_ path: String, _ bytes: [UInt8]) throws(WriteError) {
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        } catch {
            throw WriteError(description: "cannot write \(path): \(error.localizedDescription)")
        }
    }
}
