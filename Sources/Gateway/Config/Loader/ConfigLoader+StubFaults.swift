import Yams

/// A stub's `faults`, and the check that a coalesced route does not use a stub whose faults act on the client.
extension Builder {
    /// `faults`: a list of `{ type, rate, mode, duration }` (a single mapping is accepted).
    func stubFaults(_ entry: YAMLReader.Entry) -> [StubFaultConfig]? {
        let nodes: [Node]
        switch entry.value {
        case .sequence(let sequence): nodes = Array(sequence)
        case .mapping: nodes = [entry.value]
        default:
            reader.report(
                line: reader.line(of: entry.value), entry.path,
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
                if kind == nil {
                    reader.report(line: value.line, item.path, "invalid fault type \(value.shown) (\(kinds))")
                }
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
                reader.report(
                    line: map.line, YAMLReader.join(path, "duration"), "required key is missing for slow_body")
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

    // MARK: coalesced routes

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
                let place = Self.clientFault(in: stub)
            else { continue }
            reader.report(
                line: reader.line(of: coalesce, fallback: reader.line(of: node)), "routes[\(index)].coalesce",
                "a coalesced route shares one answer among its callers, so it cannot use a stub with faults that act on the client's connection (upstreams.\(name).stub\(place)); give them mode: upstream, or set coalesce: false"
            )
        }
    }

    /// Where a stub has a fault with `mode: client` (`.faults`, `.responses[2].faults`), if anywhere.
    static func clientFault(in stub: StubConfig) -> String? {
        func has(_ faults: [StubFaultConfig]) -> Bool { faults.contains { $0.mode == .client && $0.rate > 0 } }
        if has(stub.faults) { return ".faults" }
        for (index, response) in stub.responses.enumerated() where response.answers.contains(where: { has($0.faults) })
        {
            return ".responses[\(index)].faults"
        }
        return nil
    }
}

extension Node {
    fileprivate var isSequence: Bool {
        if case .sequence = self { return true }
        return false
    }
}
