import HTTPWire

/// Builds the headers sent upstream and returned to the client.
enum ProxyHeaders {
    /// Headers the gateway sets itself; a client's values are dropped (or, for `X-Forwarded-For`, appended to).
    static let gatewayOwned = ["host", "content-length", "expect", "x-request-id", "x-forwarded-for",
                               "x-forwarded-proto", "x-forwarded-host", "via", "forwarded"]

    /// Headers that select the response or identify the caller: they stay in the coalescing identity.
    static let identity: Set<String> = ["authorization", "cookie"]

    /// Splits the client's headers into those forwarded as part of the flight identity and those specific to this
    /// caller. Hop-by-hop fields (and names the client lists in `Connection`), the API-key header and gateway-owned fields
    /// are removed; the client's `Authorization` is dropped when the upstream injects credentials.
    static func upstreamHeaders(from client: HTTPHeaders, apiKeyHeader: String?, upstream: UpstreamConfig,
                                varyHeaders: [String], coalescing: Bool)
        -> (stable: [String: String], perRequest: [(String, String)]) {
        let listed = connectionListed(in: client)
        let dropAuthorization = upstream.accessToken != nil || upstream.credentials != nil
        var stable: [String: String] = [:]
        // Room for the forwarding headers merged in afterwards, so the dictionary is not regrown per request.
        stable.reserveCapacity(client.count + upstream.headers.count + 6)
        var perRequest: [(String, String)] = []
        let vary = varyHeaders.isEmpty ? [] : Set(varyHeaders.map { $0.lowercased() })
        var seen: [String: Int] = [:]
        for field in client {
            let name = field.name
            if isListed(name, in: gatewayOwned) || isListed(name, in: hopByHop) || isListed(name, in: listed)
                || apiKeyHeader?.equalsIgnoringASCIICase(name) == true || (dropAuthorization && name.equalsIgnoringASCIICase("authorization")) {
                continue
            }
            if coalescing, case let lower = name.lowercased(), !identity.contains(lower), !vary.contains(lower) {
                if let index = seen[lower] {
                    perRequest[index].1 += ", " + field.value
                } else {
                    seen[lower] = perRequest.count
                    perRequest.append((field.name, field.value))
                }
                continue
            }
            let separator = name.equalsIgnoringASCIICase("cookie") ? "; " : ", "
            if let existing = stable[field.name] {
                stable[field.name] = existing + separator + field.value
            } else {
                stable[field.name] = field.value
            }
        }
        for field in upstream.headers { stable[field.name] = field.value }
        return (stable, perRequest)
    }

    /// Sets `fields` in `headers`, replacing any field of the same name (compared case-insensitively).
    static func merge(_ fields: [(String, String)], into headers: inout [String: String]) {
        headers.reserveCapacity(headers.count + fields.count)
        for (name, value) in fields {
            if headers[name] == nil, let existing = headers.keys.first(where: { $0.equalsIgnoringASCIICase(name) }) {
                headers[existing] = nil
            }
            headers[name] = value
        }
    }

    /// `merge` for the forwarding headers of one caller into the headers built by ``upstreamHeaders(from:apiKeyHeader:upstream:varyHeaders:coalescing:)``:
    /// the client's fields of those names were dropped there (they are gateway-owned), so only the upstream's
    /// configured headers can hold one in another spelling, and only they are searched.
    static func mergeForwarding(_ fields: [(String, String)], into headers: inout [String: String], configured: HTTPHeaders) {
        for (name, value) in fields {
            if !configured.isEmpty, headers[name] == nil,
               let other = configured.first(where: { $0.name.equalsIgnoringASCIICase(name) }) {
                headers[other.name] = nil
            }
            headers[name] = value
        }
    }

    /// The forwarding headers for one caller.
    static func forwarding(client: HTTPHeaders, peer: String?, isTLS: Bool, requestID: String, version: HTTPVersion)
        -> [(String, String)] {
        var result: [(String, String)] = []
        result.reserveCapacity(5)
        result.append(("X-Request-Id", requestID))
        let previous = client["X-Forwarded-For"].joined(separator: ", ")
        if let peer {
            result.append(("X-Forwarded-For", previous.isEmpty ? peer : previous + ", " + peer))
        } else if !previous.isEmpty {
            result.append(("X-Forwarded-For", previous))
        }
        result.append(("X-Forwarded-Proto", isTLS ? "https" : "http"))
        if let host = client.first(name: "Host") { result.append(("X-Forwarded-Host", host)) }
        result.append(("Via", version.major >= 2 ? "2 moya-gateway" : "1.1 moya-gateway"))
        return result
    }

    /// The standard hop-by-hop names.
    private static let hopByHop = HopByHop.standard

    /// Whether `name` is one of `names`, ignoring ASCII case (a few length checks for most names: cheaper than
    /// lower-casing the name and hashing it).
    private static func isListed(_ name: String, in names: [String]) -> Bool {
        names.contains { $0.equalsIgnoringASCIICase(name) }
    }

    /// The lower-cased names a peer lists in `Connection` (hop-by-hop for this message), except protected ones.
    private static func connectionListed(in headers: HTTPHeaders) -> [String] {
        var onlyStandard = true
        for field in headers where field.name.equalsIgnoringASCIICase("Connection") {
            // The usual values name nothing beyond the standard hop-by-hop fields, which are removed anyway.
            if !(field.value.equalsIgnoringASCIICase("keep-alive") || field.value.equalsIgnoringASCIICase("close")) {
                onlyStandard = false
                break
            }
        }
        if onlyStandard { return [] }
        return headers.tokens(name: "Connection").map { $0.lowercased() }.filter { !HopByHop.protected.contains($0) }
    }

    /// Response fields never returned to the client: hop-by-hop, framing and the request id (the gateway sets it).
    private static let droppedDownstream = HopByHop.standard + ["Content-Length", "X-Request-Id"]

    /// The upstream's response headers as returned to the client: hop-by-hop and framing fields (and names listed in
    /// `Connection`) removed, `Via` and the request id added. One pass, in the upstream's order.
    static func downstream(from upstream: HTTPHeaders, requestID: String) -> HTTPHeaders {
        let listed = connectionListed(in: upstream)
        var headers = HTTPHeaders()
        headers.reserveCapacity(upstream.count + 2)
        for field in upstream {
            if isListed(field.name, in: droppedDownstream) || isListed(field.name, in: listed) { continue }
            headers.add(name: field.name, value: field.value)
        }
        headers.add(name: "Via", value: "1.1 moya-gateway")
        headers.add(name: "X-Request-Id", value: requestID)
        return headers
    }

    /// The same for headers read from an `HTTPURLResponse`.
    static func downstream(from upstream: [AnyHashable: Any], requestID: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (key, value) in upstream {
            guard let name = key as? String else { continue }
            headers.add(name: name, value: "\(value)")
        }
        headers = HopByHop.removing(from: headers)
        headers.remove(name: "Content-Length")
        headers.remove(name: "X-Request-Id")
        headers.add(name: "Via", value: "1.1 moya-gateway")
        headers.add(name: "X-Request-Id", value: requestID)
        return headers
    }
}
