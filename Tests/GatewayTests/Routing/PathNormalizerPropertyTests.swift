import Testing

@testable import Gateway

/// FUZZ-04 as property tests: random paths built from dangerous pieces.
@Suite struct PathNormalizerPropertyTests {
    static let pieces = [
        "api", "users", "7", "..", ".", "", "%2e%2e", "%2E", "%2f", "%5c", "%00", "%41", "%7e", "a%20b",
        "%c0%ae", "%252f", "..;", ";x", "@", "%", "%e", "x.y", "~", "\\", "%C3%A9", "admin", "a:b"
    ]

    static func randomTarget(_ rng: inout SplitMix64) -> String {
        let count = Int(rng.next() % 7)
        var parts: [String] = []
        for _ in 0..<count { parts.append(pieces[Int(rng.next() % UInt64(pieces.count))]) }
        var target = "/" + parts.joined(separator: "/")
        if rng.next() % 4 == 0 { target += "/" }
        if rng.next() % 5 == 0 { target += "?b=2&a=%2F.." }
        return target
    }

    static let table: RouteTable = {
        let text = """
            upstreams:
              up: { base_url: "http://127.0.0.1:1/base" }
            routes:
              - name: users
                match: { path_prefix: /api/users }
                upstream: up
                rewrite: { strip_prefix: /api, add_prefix: /v2 }
              - name: api
                match: { path_prefix: /api }
                upstream: up
            """
        guard case .success(let config) = ConfigLoader().load(path: "p.yaml", text: text, environment: [:]) else {
            fatalError("config")
        }
        return RouteTable(config: config)
    }()

    @Test func normalisingTwiceIsIdempotentAndNeverTraps() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<20_000 {
            let target = Self.randomTarget(&rng)
            guard case .success(let once) = PathNormalizer.normalize(target: target) else { continue }
            #expect(once.path.hasPrefix("/"))
            #expect(!once.path.contains("//"))
            let segments = once.path.split(separator: "/")
            #expect(!segments.contains(".") && !segments.contains(".."))
            let twice = PathNormalizer.normalize(path: once.path)
            #expect(twice == .success(once.path), "\(target)")
        }
    }

    @Test func matchedPathsStayUnderTheRoutePrefixAndTheUpstreamBase() {
        var rng = SplitMix64(seed: 11)
        var matchedCount = 0
        for _ in 0..<20_000 {
            let target = Self.randomTarget(&rng)
            guard
                case .matched(let route, let upstreamPath, _) = Self.table.route(
                    method: .get, host: nil, target: target)
            else { continue }
            matchedCount += 1
            guard case .success(let normalized) = PathNormalizer.normalize(target: target) else {
                Issue.record("matched but not normalisable: \(target)")
                continue
            }
            guard case .prefix(let prefix) = route.kind else { continue }
            #expect(PathNormalizer.hasSegmentPrefix(normalized.path, prefix), "\(target)")
            let base = route.name == "users" ? "/base/v2/" : "/base/"
            #expect(
                upstreamPath.hasPrefix(base) || upstreamPath == String(base.dropLast()), "\(target) -> \(upstreamPath)")
            let pathPart = upstreamPath.split(separator: "?", maxSplits: 1).first.map(String.init) ?? upstreamPath
            #expect(!pathPart.split(separator: "/").contains(".."))
            #expect(!pathPart.lowercased().contains("%2f") && !pathPart.contains("%2E"))
        }
        #expect(matchedCount > 100)
    }

    /// The fast path for already-normal targets gives exactly what the full normaliser gives, and takes the common
    /// targets.
    @Test func plainTargetsAgreeWithTheFullNormaliser() {
        var rng = SplitMix64(seed: 5)
        var plainCount = 0
        let extra = [
            "/", "/a/", "/a?", "/?x", "/a?b?c", "/a;b/c", "/a/.b", "/a//b", "/a#f", "/a?%zz", "/a?x%41", "/a b"
        ]
        var targets = extra
        for _ in 0..<20_000 { targets.append(Self.randomTarget(&rng)) }
        for target in targets {
            let bytes = Array(target.utf8)
            let split = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
            guard let plain = PathNormalizer.plainTarget(target) else { continue }
            plainCount += 1
            #expect(PathNormalizer.normalize(target: target) == .success(plain), "\(target)")
            #expect(PathNormalizer.normalizePath(bytes[..<split]) == .success(plain.path), "\(target)")
        }
        #expect(PathNormalizer.plainTarget("/api/users/7?x=1") == NormalizedTarget(path: "/api/users/7", query: "x=1"))
        #expect(PathNormalizer.plainTarget("/a/") == NormalizedTarget(path: "/a/", query: nil))
        #expect(plainCount > 1_000)
    }

    @Test func matchingIsInvariantToEncodingUnreservedCharacters() {
        var rng = SplitMix64(seed: 3)
        let unreserved = Array("abcxyzABCXYZ0129-._~")
        for _ in 0..<5_000 {
            var plain = "/api"
            var encoded = "/api"
            for _ in 0..<Int(rng.next() % 4 + 1) {
                plain += "/"
                encoded += "/"
                for _ in 0..<Int(rng.next() % 5 + 1) {
                    let char = unreserved[Int(rng.next() % UInt64(unreserved.count))]
                    plain.append(char)
                    if rng.next() % 2 == 0, let ascii = char.asciiValue {
                        let hex = String(ascii, radix: 16)
                        encoded += "%" + (rng.next() % 2 == 0 ? hex.uppercased() : hex)
                    } else {
                        encoded.append(char)
                    }
                }
            }
            let a = Self.table.route(method: .get, host: nil, target: plain)
            let b = Self.table.route(method: .get, host: nil, target: encoded)
            #expect(a == b, "\(plain) vs \(encoded)")
        }
    }
}
