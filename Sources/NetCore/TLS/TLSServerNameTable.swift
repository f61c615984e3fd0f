/// Chooses a server certificate by SNI name: exact names first, then one-label wildcards (`*.example.com` matches
/// `a.example.com`, not `example.com` or `a.b.example.com`). Names compare case-insensitively, a trailing dot ignored.
struct TLSServerNameTable {
    private var exact: [String: Int] = [:]
    private var wildcardSuffixes: [String: Int] = [:]

    /// Adds `names` for the certificate at `index`; a name already taken keeps its first certificate.
    mutating func add(_ names: [String], index: Int) {
        for raw in names {
            let name = TLSServerNameTable.normalized(raw)
            if name.hasPrefix("*.") {
                let suffix = String(name.dropFirst(2))
                if !suffix.isEmpty && wildcardSuffixes[suffix] == nil { wildcardSuffixes[suffix] = index }
            } else if !name.isEmpty && !name.contains("*") && exact[name] == nil {
                exact[name] = index
            }
        }
    }

    /// The index of the certificate for `serverName`, or nil when none is for it.
    func lookup(_ serverName: String) -> Int? {
        let name = TLSServerNameTable.normalized(serverName)
        if let index = exact[name] { return index }
        guard let dot = name.firstIndex(of: "."), dot != name.startIndex else { return nil }
        return wildcardSuffixes[String(name[name.index(after: dot)...])]
    }

    static func normalized(_ name: String) -> String {
        var lowered = name.lowercased()
        if lowered.hasSuffix(".") { lowered.removeLast() }
        return lowered
    }
}
