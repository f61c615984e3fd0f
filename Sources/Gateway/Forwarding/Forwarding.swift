import HTTPWire

/// The forwarding fields the gateway sends upstream for one caller, written straight into the upstream's header list
/// (no list of their own): `X-Request-Id`, `X-Forwarded-For` (the client's chain, then the peer), `X-Real-IP` (the
/// client's address as resolved behind trusted proxies, replacing any the client sent), `X-Forwarded-Proto`,
/// `X-Forwarded-Host` (the client's `Host`) and `Via` (the client's chain, then this hop).
struct Forwarding {
    /// The connection's peer address.
    let peer: String?
    /// The peer, or behind trusted proxies the client they forwarded for.
    let clientAddress: String?
    let isTLS: Bool
    let requestID: String
    /// The protocol the request arrived in (for `Via`).
    let version: HTTPVersion

    /// The names ``append(to:client:)`` writes for `client`'s request: a configured upstream field of one of these
    /// names is replaced.
    func names(client: HTTPFields) -> HTTPFieldNameSet {
        var names: [HTTPFieldName] = [.xRequestId, .xForwardedProto, .via]
        if peer != nil || forwardedFor(client: client) != nil { names.append(.xForwardedFor) }
        if clientAddress != nil { names.append(.xRealIp) }
        if client.firstIndex(token: .host) != nil { names.append(.xForwardedHost) }
        return HTTPFieldNameSet(names)
    }

    /// Appends the forwarding fields for `client`'s request to `list`.
    func append(to list: inout HTTPFields, client: HTTPFields) {
        // The client's fields that decide the forwarding ones, found in one pass.
        var hasForwardedFor = false
        var hasVia = false
        var host: Int?
        for index in 0..<client.count {
            switch client.token(at: index) {
            case .xForwardedFor: hasForwardedFor = true
            case .via: hasVia = true
            case .host where host == nil: host = index
            default: break
            }
        }
        list.add(knownName: "X-Request-Id", token: .xRequestId, value: requestID)
        if !hasForwardedFor {
            if let peer { list.add(knownName: "X-Forwarded-For", token: .xForwardedFor, value: peer) }
        } else if let chain = forwardedFor(client: client) {
            list.add(knownName: "X-Forwarded-For", token: .xForwardedFor, value: chain)
        }
        if let clientAddress { list.add(knownName: "X-Real-IP", token: .xRealIp, value: clientAddress) }
        list.add(knownName: "X-Forwarded-Proto", token: .xForwardedProto, staticValue: isTLS ? "https" : "http")
        if let host {
            list.add(knownName: "X-Forwarded-Host", token: .xForwardedHost, valueOfFieldAt: host, of: client)
        }
        if !hasVia {
            if let hop = ProxyHeaders.staticVia(version) {
                list.add(knownName: "Via", token: .via, staticValue: hop)
            } else {
                list.add(knownName: "Via", token: .via, value: ProxyHeaders.via(version))
            }
        } else {
            let hop = ProxyHeaders.via(version)
            let previous = Self.joined(client, .via)
            list.add(knownName: "Via", token: .via, value: previous.isEmpty ? hop : previous + ", " + hop)
        }
    }

    /// `X-Forwarded-For` for a client that sent one or more: its chain, then the peer; nil when both are empty.
    private func forwardedFor(client: HTTPFields) -> String? {
        let previous = Self.joined(client, .xForwardedFor)
        guard let peer else { return previous.isEmpty ? nil : previous }
        return previous.isEmpty ? peer : previous + ", " + peer
    }

    /// The values of every field named `token` in `fields`, joined with `, ` (an empty value is kept, as a list
    /// element of its own).
    private static func joined(_ fields: HTTPFields, _ token: HTTPFieldName) -> String {
        var values: [String] = []
        var index = fields.firstIndex(token: token)
        while let found = index {
            values.append(fields.value(at: found))
            index = fields.firstIndex(token: token, from: found + 1)
        }
        return values.joined(separator: ", ")
    }
}
