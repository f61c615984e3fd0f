import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// FUZZ-07: seeded random header sets and query strings with a canary in every value position (alone, first, middle,
/// last, repeated fields) under every casing of the secret names (and percent-encoded or `+`-padded query names):
/// no canary survives ``HeaderRedactor``.
@Suite struct HeaderRedactorFuzzTests {
    static let canary = "CNRY7f3a"

    /// Draws the cases from a seeded ``SplitMix64``, so a failure names its seed and round.
    struct Generator {
        var source: SplitMix64
        init(state: UInt64) { source = SplitMix64(seed: state) }
        mutating func below(_ bound: Int) -> Int { Int(source.next() % UInt64(bound)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
        mutating func chance(_ oneIn: Int) -> Bool { below(oneIn) == 0 }

        /// `name` with each letter's case drawn at random.
        mutating func recased(_ name: String) -> String {
            String(
                name.map { character -> Character in
                    let text = String(character)
                    return chance(2) ? Character(text.uppercased()) : Character(text.lowercased())
                })
        }

        /// Filler text for a value: letters, digits and the separators values carry.
        mutating func filler() -> String {
            let pieces = ["Bearer ", "Basic ", "s=", "; ", ", ", "a1", "zz", "=", " ", "x-y", "%20", "\"q\""]
            return (0..<below(4)).map { _ in pick(pieces) }.joined()
        }

        /// A value holding the canary at a random place (or several).
        mutating func secretValue() -> String {
            switch below(4) {
            case 0: return HeaderRedactorFuzzTests.canary
            case 1: return filler() + HeaderRedactorFuzzTests.canary
            case 2: return HeaderRedactorFuzzTests.canary + filler()
            default: return filler() + HeaderRedactorFuzzTests.canary + filler() + HeaderRedactorFuzzTests.canary
            }
        }
    }

    static let harmlessNames = ["Accept", "User-Agent", "X-Request-Id", "Content-Type", "X-Trace", "Cache-Control"]

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func noCanarySurvivesHeaderRedaction(seed: UInt64) {
        var random = Generator(state: seed)
        let redactor = HeaderRedactor()
        let secretNames = LoggingConfig.defaultRedactHeaders
        for round in 0..<2_000 {
            var pairs: [(String, String)] = []
            for _ in 0..<(1 + random.below(8)) {
                if random.chance(2) {
                    pairs.append((random.recased(random.pick(secretNames)), random.secretValue()))
                } else {
                    pairs.append((random.pick(Self.harmlessNames), random.filler() + "ok"))
                }
            }
            let redacted = redactor.redact(HTTPFields(pairs))
            let leaked = redacted.filter { $0.value.contains(Self.canary) }
            #expect(leaked.isEmpty, "seed \(seed) round \(round): \(pairs) left \(leaked.map(\.name))")
            #expect(redacted.count == pairs.count, "names and order kept")
            for (name, value) in pairs where value.contains(Self.canary) {
                #expect(!redactor.redact(name: name, value: value).contains(Self.canary), "\(name)")
            }
        }
    }

    @Test(arguments: [UInt64(11), 12, 13, 14])
    func noCanarySurvivesQueryRedaction(seed: UInt64) {
        var random = Generator(state: seed)
        let names = HeaderRedactor.sensitiveQueryParameters
        for round in 0..<2_000 {
            var parameters: [String] = []
            for _ in 0..<(1 + random.below(6)) {
                if random.chance(2) {
                    var name = random.recased(random.pick(names))
                    if random.chance(4), let first = name.first {
                        // Percent-encode the first letter: `%74oken` is `token`.
                        name = String(format: "%%%02X", first.asciiValue ?? 0) + name.dropFirst()
                    }
                    if random.chance(5) { name += "+" }
                    parameters.append(name + "=" + random.secretValue().replacingOccurrences(of: " ", with: "+"))
                } else {
                    let name = random.pick(["a", "page", "q", "sort", "tokens_left"])
                    parameters.append(name + "=" + random.pick(["1", "x", ""]))
                }
            }
            let target = random.pick(["/api/x", "/", "/v1/users/7"]) + "?" + parameters.joined(separator: "&")
            let redacted = HeaderRedactor.redactQuery(in: target)
            #expect(!redacted.contains(Self.canary), "seed \(seed) round \(round): \(target) -> \(redacted)")
        }
    }
}
