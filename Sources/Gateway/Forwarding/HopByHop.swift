import HTTPWire

/// Hop-by-hop header handling (RFC 9110 §7.6.1): these fields describe one connection and are never forwarded.
package enum HopByHop {
    /// Always removed, in both directions (`HTTP2-Settings` belongs to an `Upgrade: h2c` of one connection, RFC 9113
    /// §3.2.1, whether or not the client lists it in `Connection`).
    package static let standard = [
        "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
        "Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
        "HTTP2-Settings"
    ]

    /// Fields a peer cannot remove by naming them in `Connection` (framing and routing depend on them).
    package static let protected = ["host", "content-length"]

    /// The names to remove from `headers`: the standard list plus every name listed in `Connection` (except
    /// ``protected``), lower-cased.
    package static func names(in headers: HTTPFields) -> Set<String> {
        var names = Set(standard.map { $0.lowercased() })
        for token in headers.tokens(name: "Connection") {
            let name = token.lowercased()
            if !protected.contains(name) { names.insert(name) }
        }
        return names
    }

    /// Removes the hop-by-hop fields from `headers`.
    package static func remove(from headers: inout HTTPFields) {
        headers = removing(from: headers)
    }

    /// `headers` without its hop-by-hop fields.
    package static func removing(from headers: HTTPFields) -> HTTPFields {
        // The standard names are tokens (`HTTPFieldName.isHopByHop`); only names listed in `Connection` are compared.
        let listed = names(in: headers).subtracting(standard.map { $0.lowercased() })
        var kept = headers
        kept.removeAll { token, name in
            token.isHopByHop || (!listed.isEmpty && listed.contains(String(decoding: name, as: UTF8.self).lowercased()))
        }
        return kept
    }
}
