import HTTPWire

/// A response's `match` compiled: methods, the path pattern, query, headers and JSON body fields, checked in that
/// order (cheapest first) without allocating, except for a JSON body, which is parsed once it is needed. A class, so
/// that trying it does not copy (and retain) each of its fields.
final class StubMatcher: Sendable {
    let methods: [HTTPMethod]?
    let path: PathPattern
    let query: [(name: [UInt8], value: [UInt8])]
    let headers: [StubNameValue]
    let json: [StubJSONField]

    init(_ match: StubMatchConfig) {
        methods = match.methods
        if let exact = match.path {
            path = .exact(exact)
        } else if let prefix = match.pathPrefix {
            path = .prefix(prefix)
        } else if let template = match.pathParams {
            path = .template(template)
        } else {
            path = .any
        }
        query = match.query.map { (Array($0.name.utf8), Array($0.value.utf8)) }
        headers = match.headers
        json = match.json
    }

    /// Whether `request` meets every condition. `methodChecked`: the method was already checked (by the prefilter's
    /// bits, for a method that has one).
    func matches(_ request: borrowing StubRequest, methodChecked: Bool = false) -> Bool {
        request.withPathBytes { matches(request, pathBytes: $0, methodChecked: methodChecked) }
    }

    /// ``matches(_:methodChecked:)`` with the request path's UTF-8 at hand (a responder tries many matchers on it).
    /// The cheapest conditions first: the method, a query or header the request lacks, then the path, the query's
    /// values, and a JSON body last.
    func matches(_ request: borrowing StubRequest, pathBytes: UnsafeBufferPointer<UInt8>, methodChecked: Bool) -> Bool {
        if !methodChecked, let methods,
            !(methods.contains(request.method) || (request.method == .head && methods.contains(.get)))
        {
            return false
        }
        if !query.isEmpty && !request.hasQuery { return false }
        for condition in headers where request.headers.first(name: condition.name) != condition.value {
            return false
        }
        guard path.matches(bytes: pathBytes) else { return false }
        if !query.isEmpty, let raw = request.query {
            for condition in query where !StubQuery.contains(name: condition.name, value: condition.value, in: raw) {
                return false
            }
        }
        if !json.isEmpty && !StubJSON.matches(json, body: request.body) { return false }
        return true
    }
}

/// What can be told of a response's match from plain numbers: the methods it allows (a bit each), its path's first
/// segment (a hash) and its number of segments. A request that fails these cannot match, and is passed over without
/// the matcher being touched; one that passes is tried by the matcher, which decides.
struct StubPrefilter: Sendable {
    /// The request's side, computed once per request.
    struct Key {
        var methodBit: UInt16
        var firstSegment: UInt64
        var segments: Int
        var hasQuery: Bool
        /// The request's header names, one bit each (``StubPrefilter/headerBit(_:)``); all bits when not computed.
        var headerBits: UInt64

        init(_ request: borrowing StubRequest) {
            let names = Set(request.headers.map { $0.name.lowercased() }).map { StubPrefilter.HeaderName($0) }
            self = request.withPathBytes { Key(request, pathBytes: $0, headerNames: names) }
        }

        /// `headerNames`: the header names the responses' conditions use; the request's bits are those of the ones
        /// it has.
        init(_ request: borrowing StubRequest, pathBytes: UnsafeBufferPointer<UInt8>, headerNames: [HeaderName]) {
            methodBit = StubPrefilter.bit(request.method)
            (firstSegment, segments) = StubPrefilter.shape(pathBytes)
            hasQuery = request.hasQuery
            var bits: UInt64 = 0
            for name in headerNames where request.headers.contains(name: name.name) { bits |= name.bit }
            headerBits = bits
        }

        /// Whether the prefilter's method bits decide the method alone (it is one with a bit of its own).
        var decidesMethod: Bool { methodBit != StubPrefilter.otherMethod }
    }

    /// Methods the response allows (`anyMethod`: all, or one without a bit of its own).
    private var methods: UInt16
    /// The hash of the path's first segment, when the pattern fixes it; 0 when it does not.
    private var firstSegment: UInt64
    /// The number of segments the path must have (or at least have, for a prefix); -1 for any.
    private var segments: Int
    private var segmentsAtLeast: Bool
    /// Whether the match needs a query.
    private var needsQuery: Bool
    /// The header names the match needs, one bit each.
    private var headerBits: UInt64

    static let anyMethod: UInt16 = 0xFFFF
    static let otherMethod: UInt16 = 1 << 15

    init(_ matcher: StubMatcher) {
        needsQuery = !matcher.query.isEmpty
        headerBits = matcher.headers.reduce(0) { $0 | Self.headerBit($1.name) }
        if let methods = matcher.methods {
            var mask: UInt16 = 0
            for method in methods {
                mask |= Self.bit(method)
                if method == .get { mask |= Self.bit(.head) }
            }
            self.methods = mask
        } else {
            methods = Self.anyMethod
        }
        switch matcher.path.kind {
        case .any:
            (firstSegment, segments, segmentsAtLeast) = (0, -1, false)
        case .exact(let path):
            (firstSegment, segments) = Self.shape(path[...])
            segmentsAtLeast = false
        case .prefix(let prefix):
            if prefix == "/" {
                (firstSegment, segments, segmentsAtLeast) = (0, -1, false)
            } else {
                (firstSegment, segments) = Self.shape(prefix[...])
                segmentsAtLeast = true
            }
        case .template(let parts):
            firstSegment = parts.first.flatMap { $0 }.map { Self.hash($0) } ?? 0
            segments = parts.count
            segmentsAtLeast = false
        }
    }

    func admits(_ key: Key) -> Bool {
        guard methods & key.methodBit != 0, !needsQuery || key.hasQuery, key.headerBits & headerBits == headerBits
        else {
            return false
        }
        if firstSegment != 0 && firstSegment != key.firstSegment { return false }
        if segments >= 0 && (segmentsAtLeast ? key.segments < segments : key.segments != segments) { return false }
        return true
    }

    /// The method's bit; one shared bit for every method without its own (the matcher then compares names).
    static func bit(_ method: HTTPMethod) -> UInt16 {
        switch method {
        case .get: return 1 << 0
        case .head: return 1 << 1
        case .post: return 1 << 2
        case .put: return 1 << 3
        case .delete: return 1 << 4
        case .patch: return 1 << 5
        case .options: return 1 << 6
        default: return otherMethod
        }
    }

    /// A normalised path's first segment (hashed; never 0) and its number of segments, counted as
    /// `PathNormalizer.segments(of:)` counts them (`/` none, `/a/b/` three).
    static func shape(_ path: Substring) -> (UInt64, Int) {
        if let shape = path.utf8.withContiguousStorageIfAvailable(shape) { return shape }
        return Array(path.utf8).withUnsafeBufferPointer(shape)
    }

    static func shape(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, Int) {
        var value = hashSeed
        guard bytes.count > 1 else { return (value, 0) }  // `/` (or nothing): no segment
        var segments = 1
        var inFirst = true
        for index in 1..<bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "/") {
                segments += 1
                inFirst = false
            } else if inFirst {
                value = (value ^ UInt64(byte)) &* hashPrime
            }
        }
        return (value == 0 ? 1 : value, segments)
    }

    /// A header name a condition uses, and its bit.
    struct HeaderName: Sendable {
        let name: String
        let bit: UInt64

        init(_ name: String) {
            self.name = name
            bit = StubPrefilter.headerBit(name)
        }
    }

    /// A header name's bit (its case-insensitive FNV-1a hash, modulo 64): a request whose names' bits lack one of a
    /// match's cannot have that header.
    static func headerBit(_ name: String) -> UInt64 {
        var value = hashSeed
        for byte in name.utf8 {
            value = (value ^ UInt64(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)) &* hashPrime
        }
        return 1 << (value % 64)
    }

    /// FNV-1a, never 0 (0 means "any").
    static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
        var value = hashSeed
        for byte in bytes { value = (value ^ UInt64(byte)) &* hashPrime }
        return value == 0 ? 1 : value
    }

    private static let hashSeed: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let hashPrime: UInt64 = 0x100_0000_01b3
}
