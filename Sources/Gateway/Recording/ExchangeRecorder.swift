import Foundation
import HTTPWire
import Locking
import Logging

/// What `moya-gateway record` keeps of the proxied traffic: one entry per distinct exchange (upstream, method, the
/// path the upstream got, its query sorted, and the route's `coalesce_vary` header values, never identity headers),
/// with the first answer's status, headers and body (decoded: a gzip body is stored as the client would read it,
/// and noted) and every observed duration, for a latency distribution fitted at the end (``RecordingWriter``).
///
/// Nothing secret is kept: `Authorization`, `Cookie`, `Set-Cookie`, the API-key header, the names in
/// `logging.redact_headers` and the hop-by-hop and framing fields are not recorded, and any value the gateway sent
/// as a credential (the injected token, the credentials, the client's `Authorization`, `Cookie` and API key) or the
/// upstream set as a cookie is replaced by `[REDACTED]` wherever it appears in a recorded body or header. Memory is
/// bounded by the two size caps; past them exchanges are counted, not kept.
package final class ExchangeRecorder: Sendable {
    /// The caps, in bytes.
    package struct Limits: Sendable {
        /// The largest body recorded; a longer one is not (counted as over the cap).
        package var maxBodyBytes: Int
        /// The most body bytes recorded in all; past it nothing more is (counted, and said once in the log).
        package var maxTotalBytes: Int

        package init(maxBodyBytes: Int = 1 << 20, maxTotalBytes: Int = 256 << 20) {
            self.maxBodyBytes = maxBodyBytes
            self.maxTotalBytes = maxTotalBytes
        }
    }

    /// One distinct exchange.
    struct Entry: Sendable {
        var upstream: String
        var method: String
        /// The path as a stub of the upstream sees it (without the base URL's path), without query.
        var path: String
        /// Query parameters in sorted order, decoded.
        var query: [(name: String, value: String)]
        /// The route's `coalesce_vary` headers the request had (identity headers never).
        var varyHeaders: [(name: String, value: String)]
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        /// The upstream sent the body gzip- (or deflate-) encoded; it is stored decoded.
        var decodedFrom: String?
        /// Every observed duration in seconds (the first ``maxSamples``).
        var durations: [Double]
        var count: Int
    }

    /// Why an exchange was not recorded (the summary's lines).
    enum Skip: String, CaseIterable, Sendable {
        case failed = "failed or truncated (no complete answer)"
        case streamed = "body over the per-body size cap"
        case full = "recording over its total size cap"
        case undecodable = "encoded body that could not be decoded"
    }

    /// Durations kept per exchange (enough for a fit; memory stays bounded on a long run).
    static let maxSamples = 10_000

    package let limits: Limits
    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var bodyBytes = 0
        var observed = 0
        var skipped: [Skip: Int] = [:]
        var saidFull = false
    }
    private let state = Locked(State())

    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Records one complete upstream answer. `path` is the origin-form target the upstream got (with the base
    /// URL's path, which `basePath` names and which is dropped), `secrets` every credential value of the exchange.
    func observe(
        upstream: String, basePath: String, method: String, target: String, requestHeaders: HTTPFields,
        varyNames: [String], identityNames: HeaderNameSet, status: Int, responseHeaders: HTTPFields,
        body: [UInt8], duration: Double, secrets: [String], logger: Logger
    ) {
        guard body.count <= limits.maxBodyBytes else { return skip(.streamed) }
        let (pathPart, queryPart) = Self.split(target)
        let path = Self.dropBase(basePath, from: pathPart)
        let query = Self.sortedQuery(queryPart)
        let vary: [(name: String, value: String)] = varyNames.compactMap { name in
            guard !identityNames.contains(name), let value = requestHeaders.first(name: name) else { return nil }
            return (name, value)
        }
        var key = "\(upstream)\u{0}\(method)\u{0}\(path)"
        for pair in query { key += "\u{0}q\(pair.name)=\(pair.value)" }
        for pair in vary { key += "\u{0}h\(pair.name.lowercased())=\(pair.value)" }
        let isNew = state.withLock { state -> Bool in
            guard var entry = state.entries[key] else { return true }
            entry.count += 1
            if entry.durations.count < Self.maxSamples { entry.durations.append(duration) }
            state.entries[key] = entry
            state.observed += 1
            return false
        }
        guard isNew else { return }
        // A new exchange: its answer as the client would read it, with no secret in it.
        var decodedFrom: String?
        var plain = body
        if let coding = responseHeaders.first(name: "Content-Encoding")?.trimmingSpaces().lowercased(),
            coding != "identity"
        {
            guard coding == "gzip" || coding == "x-gzip" || coding == "deflate",
                let decoded = try? Inflater.decompress(body, maxOutputBytes: limits.maxBodyBytes)
            else {
                return skip(.undecodable)
            }
            plain = decoded
            decodedFrom = String(coding)
        }
        let scrubbed = Self.scrub(plain, secrets: secrets)
        var headers: [(name: String, value: String)] = []
        for field in responseHeaders where !identityNames.contains(field.name) && !Self.dropped.contains(field.name) {
            headers.append(
                (field.name, String(decoding: Self.scrub(Array(field.value.utf8), secrets: secrets), as: UTF8.self)))
        }
        let entry = Entry(
            upstream: upstream, method: method, path: path, query: query, varyHeaders: vary, status: status,
            headers: headers, body: scrubbed, decodedFrom: decodedFrom, durations: [duration], count: 1)
        let full = state.withLock { state -> Bool? in
            if let existing = state.entries[key] {
                // Recorded meanwhile by another thread: one more observation of it.
                var entry = existing
                entry.count += 1
                if entry.durations.count < Self.maxSamples { entry.durations.append(duration) }
                state.entries[key] = entry
                state.observed += 1
                return nil
            }
            guard state.bodyBytes + scrubbed.count <= limits.maxTotalBytes else {
                state.skipped[.full, default: 0] += 1
                defer { state.saidFull = true }
                return !state.saidFull
            }
            state.bodyBytes += scrubbed.count
            state.entries[key] = entry
            state.order.append(key)
            state.observed += 1
            return nil
        }
        if full == true {
            logger.warning(
                "record: the recording reached its size cap; further exchanges are counted, not recorded",
                metadata: ["max_size_bytes": "\(limits.maxTotalBytes)"])
        }
    }

    /// Counts an exchange that is not recorded.
    func skip(_ reason: Skip) {
        state.withLock { $0.skipped[reason, default: 0] += 1 }
    }

    /// The recorded exchanges in the order they were first seen, and the counts for the summary.
    func snapshot() -> (entries: [Entry], observed: Int, skipped: [Skip: Int], bodyBytes: Int) {
        state.withLock { state in
            (state.order.compactMap { state.entries[$0] }, state.observed, state.skipped, state.bodyBytes)
        }
    }

    // MARK: Helpers

    /// Response fields not recorded: framing, hop-by-hop, and those the gateway (or the replaying stub) sets itself.
    static let dropped = HeaderNameSet(
        HopByHop.standard + [
            "Content-Length", "Content-Encoding", "Date", "Via", "X-Request-Id", "Set-Cookie", "Set-Cookie2",
            "Authorization", "Proxy-Authorization", "Cookie", "WWW-Authenticate", "Proxy-Authenticate"
        ])

    /// The names never recorded or matched on: identity headers, the API-key header, the redacted ones.
    static func identityNames(apiKeyHeader: String?, redacted: [String]) -> HeaderNameSet {
        HeaderNameSet(
            ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "Set-Cookie2"]
                + redacted + (apiKeyHeader.map { [$0] } ?? []))
    }

    static func split(_ target: String) -> (Substring, Substring?) {
        guard let mark = target.firstIndex(of: "?") else { return (target[...], nil) }
        return (target[..<mark], target[target.index(after: mark)...])
    }

    static func dropBase(_ base: String, from path: Substring) -> String {
        guard !base.isEmpty, base != "/", path.hasPrefix(base) else { return String(path) }
        let rest = path.dropFirst(base.count)
        return rest.isEmpty ? "/" : (rest.first == "/" ? String(rest) : String(path))
    }

    /// Parameters decoded (as a stub's match compares them), sorted by name (a name's values keep their order).
    static func sortedQuery(_ query: Substring?) -> [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        let pairs = query.split(separator: "&").map { pair -> (name: String, value: String) in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
        return pairs.enumerated().sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }.map(\.element)
    }

    private static func decode(_ text: Substring) -> String {
        let plus = text.replacingOccurrences(of: "+", with: " ")
        return plus.removingPercentEncoding ?? plus
    }

    /// `bytes` with every occurrence of a secret replaced by `[REDACTED]`.
    static func scrub(_ bytes: [UInt8], secrets: [String]) -> [UInt8] {
        var output = bytes
        for secret in secrets where secret.utf8.count >= 4 {
            let needle = Array(secret.utf8)
            guard output.count >= needle.count else { continue }
            var result: [UInt8] = []
            var index = 0
            var replaced = false
            while index < output.count {
                if output[index] == needle[0], index + needle.count <= output.count,
                    output[index..<(index + needle.count)].elementsEqual(needle)
                {
                    result.append(contentsOf: Array("[REDACTED]".utf8))
                    index += needle.count
                    replaced = true
                } else {
                    result.append(output[index])
                    index += 1
                }
            }
            if replaced { output = result }
        }
        return output
    }
}
