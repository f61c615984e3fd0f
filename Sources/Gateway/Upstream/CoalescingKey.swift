import HTTPWire

/// The identity of a coalescible upstream request: requests with equal keys share one upstream call.
///
/// Parts: method, upstream name, final upstream URL with its query parameters sorted, the values of the route's
/// `coalesce_vary` headers and of the ``representationHeaders`` the request carries (so that a caller never gets
/// another's variant: a gzip body it did not accept, a 206 part it did not ask for, a 304 without a body), and
/// ``identity``, a 128-bit FNV-1a hash over the caller's identity (the API-key client
/// name, every `Authorization` and every `Cookie` value, each length-prefixed and tagged so that moving bytes between
/// fields changes the hash). FNV-1a is not cryptographic: it keeps accidental collisions out of reach (2^-64 birthday
/// bound at 128 bits) and keeps credentials out of the key's memory and description; a deliberate collision would
/// need the other caller's credentials in the first place. The hash is stable across processes and runs (no seed).
package struct CoalescingKey: Sendable, Hashable, CustomStringConvertible {
    package var method: String
    package var upstream: String
    /// `origin + basePath + path` with the query parameters sorted (bytes unchanged otherwise).
    package var url: String
    /// `lower-cased name:values joined by ", "` for each `coalesce_vary` header, in route order, then for each of the
    /// ``representationHeaders`` not among them that the request has.
    package var vary: [String]
    /// FNV-1a 128 over the identity parts; 0 never occurs for a non-empty identity in practice.
    package var identity: UInt128

    package init(method: String, upstream: String, url: String, vary: [String], identity: UInt128) {
        self.method = method
        self.upstream = upstream
        self.url = url
        self.vary = vary
        self.identity = identity
    }

    /// Request headers that select which representation, or which part of it, the upstream answers with (content
    /// negotiation, ranges, conditional requests): requests that differ in one of them never share a call, whether or
    /// not the route lists it in `coalesce_vary`.
    package static let representationHeaders = [
        "Accept", "Accept-Encoding", "Accept-Language", "Range", "If-Range",
        "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since"
    ]

    /// Only GET and HEAD coalesce.
    package static func isCoalescible(_ method: HTTPMethod) -> Bool { method == .get || method == .head }

    /// The key for a request, or `nil` when the method does not coalesce.
    ///
    /// - Parameters:
    ///   - upstreamURL: the final upstream URL, `origin + upstreamPath` (``RouteResult/matched(_:upstreamPath:pathParams:)``).
    ///   - varyHeaders: the route's `coalesce_vary` names.
    ///   - requestHeaders: the client's headers (before the API-key header is removed is fine: it is not read).
    ///   - clientName: the API-key client, when one authenticated.
    package static func make(
        method: HTTPMethod, upstream: String, upstreamURL: String, varyHeaders: [String],
        requestHeaders: HTTPFields, clientName: String?
    ) -> CoalescingKey? {
        guard isCoalescible(method) else { return nil }
        var vary = varyHeaders.map { name in
            name.lowercased() + ":" + requestHeaders[name].joined(separator: ", ")
        }
        for name in representationHeaders
        where requestHeaders.contains(name: name)
            && !varyHeaders.contains(where: { $0.equalsIgnoringASCIICase(name) })
        {
            vary.append(name.lowercased() + ":" + requestHeaders[name].joined(separator: ", "))
        }
        return CoalescingKey(
            method: method.rawValue, upstream: upstream, url: sortedQuery(upstreamURL), vary: vary,
            identity: identityHash(clientName: clientName, headers: requestHeaders))
    }

    /// The URL with its `&`-separated query parameters sorted by name (the bytes before `=`); parameters of the same
    /// name keep their order, which an API may give meaning to (`sort=name&sort=date`).
    package static func sortedQuery(_ url: String) -> String {
        guard let mark = url.firstIndex(of: "?") else { return url }
        let query = url[url.index(after: mark)...]
        let parameters = query.split(separator: "&", omittingEmptySubsequences: true).enumerated().map {
            index, parameter in
            (name: Array(parameter.utf8.prefix { $0 != UInt8(ascii: "=") }), index: index, parameter: parameter)
        }
        let sorted = parameters.sorted { left, right in
            left.name == right.name ? left.index < right.index : left.name.lexicographicallyPrecedes(right.name)
        }
        let hasEmptyParameters = query.contains("&&") || query.hasPrefix("&") || query.hasSuffix("&")
        if !hasEmptyParameters && sorted.indices.allSatisfy({ sorted[$0].index == $0 }) { return url }
        return String(url[...mark]) + sorted.map(\.parameter).joined(separator: "&")
    }

    /// FNV-1a 128 over `client`, `Authorization` values and `Cookie` values (tagged, length-prefixed).
    package static func identityHash(clientName: String?, headers: HTTPFields) -> UInt128 {
        var hasher = FNV1a128()
        hasher.field(tag: 1, clientName ?? "")
        hasher.byte(clientName == nil ? 0 : 1)
        for value in headers["Authorization"] { hasher.field(tag: 2, value) }
        for value in headers["Cookie"] { hasher.field(tag: 3, value) }
        return hasher.value
    }

    /// Never shows identity material beyond its hash.
    package var description: String {
        "\(method) \(upstream) \(url) vary=\(vary) id=\(String(identity, radix: 16))"
    }
}

/// FNV-1a with the 128-bit parameters (offset basis 0x6c62272e07bb014262b821756295c58d, prime 2^88 + 0x13b).
package struct FNV1a128: Sendable {
    package private(set) var value: UInt128 = 0x6c62272e_07bb0142_62b82175_6295c58d
    static let prime: UInt128 = 0x00000000_01000000_00000000_0000013b

    package init() {}

    package mutating func byte(_ byte: UInt8) {
        value ^= UInt128(byte)
        value = value &* FNV1a128.prime
    }

    package mutating func bytes<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        for byte in bytes { self.byte(byte) }
    }

    /// A tag byte, the 8-byte little-endian length, then the bytes.
    package mutating func field(tag: UInt8, _ string: String) {
        byte(tag)
        var length = UInt64(string.utf8.count)
        for _ in 0..<8 {
            byte(UInt8(truncatingIfNeeded: length))
            length >>= 8
        }
        bytes(string.utf8)
    }
}
