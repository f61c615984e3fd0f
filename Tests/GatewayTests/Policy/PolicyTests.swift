import Foundation
import HTTPWire
import Testing
@testable import Gateway

@Suite struct CoalescingKeyTests {
    func key(_ method: HTTPMethod = .get, url: String = "http://u:1/v1/x?b=2&a=1", vary: [String] = ["Accept"],
             headers: HTTPFields = ["Accept": "application/json"], client: String? = nil) -> CoalescingKey? {
        CoalescingKey.make(method: method, upstream: "users", upstreamURL: url, varyHeaders: vary,
                           requestHeaders: headers, clientName: client)
    }

    @Test func onlyGetAndHeadCoalesce() {
        #expect(key(.get) != nil && key(.head) != nil)
        #expect(key(.post) == nil && key(.put) == nil && key("get") == nil)
        #expect(key(.get) != key(.head))
    }

    /// COAL-02: content negotiation, range and conditional headers are in every key, listed in `coalesce_vary` or not.
    @Test func headersThatSelectAVariantAreAlwaysInTheKey() {
        let plain: HTTPFields = ["Accept": "application/json"]
        for (name, value) in [("Accept-Encoding", "gzip"), ("Accept-Language", "de"), ("Range", "bytes=0-9"),
                              ("If-Range", "\"v1\""), ("If-None-Match", "\"v1\""), ("If-Match", "\"v1\""),
                              ("If-Modified-Since", "Sat, 28 Nov 2026 03:00:00 GMT"),
                              ("if-unmodified-since", "Sat, 28 Nov 2026 03:00:00 GMT")] {
            var with = plain
            with.add(name: name, value: value)
            #expect(key(headers: with) != key(headers: plain), "\(name)")
            #expect(key(headers: with) == key(headers: with), "\(name): same values share")
            var other = plain
            other.add(name: name, value: value + "x")
            #expect(key(headers: with) != key(headers: other), "\(name)")
        }
        #expect(key(vary: [], headers: ["Accept": "text/plain"]) != key(vary: [], headers: ["Accept": "application/json"]))
        // Listed in `coalesce_vary` too: one part of the key, not two.
        let listed = key(vary: ["accept-encoding", "Accept"], headers: ["Accept": "*/*", "Accept-Encoding": "gzip"])
        #expect(listed?.vary == ["accept-encoding:gzip", "accept:*/*"])
        #expect(key(vary: [], headers: ["Range": "bytes=1-2", "Accept": "*/*"])?.vary == ["accept:*/*", "range:bytes=1-2"])
        #expect(key(vary: [], headers: [:])?.vary == [])
    }

    @Test func queryOrderDoesNotMatterButValuesDo() {
        #expect(key(url: "http://u:1/v1/x?b=2&a=1") == key(url: "http://u:1/v1/x?a=1&b=2"))
        #expect(key(url: "http://u:1/v1/x?a=1") != key(url: "http://u:1/v1/x?a=2"))
        #expect(key(url: "http://u:1/v1/x") != key(url: "http://u:1/v1/y"))
        #expect(CoalescingKey.sortedQuery("/x?c=3&a=1&b=2") == "/x?a=1&b=2&c=3")
        #expect(CoalescingKey.sortedQuery("/x?sort=name&a=1&sort=date") == "/x?a=1&sort=name&sort=date",
                "parameters of one name keep their order")
        #expect(key(url: "http://u:1/v1/x?a=2&a=1") != key(url: "http://u:1/v1/x?a=1&a=2"))
    }

    @Test func varyHeadersSplitKeys() {
        #expect(key(headers: ["Accept": "text/html"]) != key(headers: ["Accept": "application/json"]))
        #expect(key(headers: ["accept": "application/json", "X-Other": "1"]) == key(headers: ["Accept": "application/json"]))
    }

    /// FUZZ-05: different identities → different keys; the same identity → the same key.
    @Test func identityPartitions() {
        var rng = SplitMix64(seed: 5)
        var seen: [UInt128: String] = [:]
        for index in 0..<5_000 {
            let auth = "Bearer t\(rng.next() % 1_000_000)-\(index)"
            let hash = CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": auth])
            if let other = seen[hash] { #expect(other == auth) }
            seen[hash] = auth
            #expect(CoalescingKey.identityHash(clientName: nil, headers: ["authorization": auth]) == hash)
        }
        let base = CoalescingKey.identityHash(clientName: nil, headers: [:])
        #expect(CoalescingKey.identityHash(clientName: "web", headers: [:]) != base)
        #expect(CoalescingKey.identityHash(clientName: "", headers: [:]) != base)
        #expect(CoalescingKey.identityHash(clientName: nil, headers: ["Cookie": "s=1"]) != base)
        // Moving bytes between the fields changes the hash.
        #expect(CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": "a", "Cookie": "b"])
            != CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": "ab"]))
        #expect(CoalescingKey.identityHash(clientName: nil, headers: ["Authorization": "x"])
            != CoalescingKey.identityHash(clientName: nil, headers: ["Cookie": "x"]))
        #expect(key(client: "web") != key(client: "billing"))
        #expect(key(headers: ["Accept": "application/json", "Cookie": "a=1"]) != key())
    }

    @Test func stableAcrossRunsAndNoSecretsInDescription() throws {
        var hasher = FNV1a128()
        hasher.bytes("a".utf8)
        #expect(hasher.value == 0xd228cb696f1a8caf78912b704e4a8964)
        let k = try #require(key(headers: ["Accept": "x", "Authorization": "Bearer canary-123"]))
        #expect(!k.description.contains("canary-123"))
    }
}

@Suite struct HeaderRedactorTests {
    @Test func redactsAnyCasing() {
        let redactor = HeaderRedactor()
        let canary = "canary-\(UInt64.random(in: 0...UInt64.max))"
        let names = ["Authorization", "AUTHORIZATION", "authorization", "aUtHoRiZaTiOn", "cookie", "SET-COOKIE",
                     "x-api-key", "Proxy-Authorization"]
        var headers = HTTPFields()
        for name in names { headers.add(name: name, value: "x \(canary) y") }
        headers.add(name: "Accept", value: "text/plain")
        let redacted = redactor.redact(headers)
        #expect(!redacted.description.contains(canary))
        #expect(redacted.first(name: "accept") == "text/plain")
        #expect(redacted.count == headers.count)
        #expect(redacted["authorization"].allSatisfy { $0 == "[REDACTED]" })
        #expect(HeaderRedactor(names: ["X-Secret"]).redact(name: "x-SECRET", value: canary) == "[REDACTED]")
        #expect(HeaderRedactor(names: ["X-Secret"]).redact(name: "Authorization", value: "v") == "v")
    }

    @Test func redactsQueryParameters() {
        #expect(HeaderRedactor.redactQuery(in: "/x?token=abc&a=1&API_KEY=k&Password=p&apikey=q&key=z&secret=s&access_token=t")
            == "/x?token=[REDACTED]&a=1&API_KEY=[REDACTED]&Password=[REDACTED]&apikey=[REDACTED]&key=[REDACTED]&secret=[REDACTED]&access_token=[REDACTED]")
        #expect(HeaderRedactor.redactQuery(in: "/x?%74oken=abc") == "/x?%74oken=[REDACTED]")
        #expect(HeaderRedactor.redactQuery(in: "/x?tokens=1&monkey=2") == "/x?tokens=1&monkey=2")
        #expect(HeaderRedactor.redactQuery(in: "/x") == "/x")
        #expect(HeaderRedactor.redactQuery(in: "/x?token") == "/x?token=[REDACTED]")
    }
}

@Suite struct HopByHopTests {
    @Test func removesStandardAndConnectionListedFields() {
        let headers: HTTPFields = [
            "Connection": "keep-alive, X-Internal, host", "Keep-Alive": "timeout=5", "TE": "trailers",
            "Transfer-Encoding": "chunked", "Upgrade": "h2c", "Proxy-Authorization": "Basic x",
            "Proxy-Connection": "keep-alive", "Trailer": "X", "x-internal": "1", "Host": "gw", "Accept": "*/*",
            "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA",
        ]
        let kept = HopByHop.removing(from: headers)
        #expect(kept.map(\.name) == ["Host", "Accept"])
        var mutable = headers
        HopByHop.remove(from: &mutable)
        #expect(mutable == kept)
    }
}

@Suite struct SharedResponsePolicyTests {
    @Test func responsesMeantForOneCallerAreNamed() {
        #expect(SharedResponsePolicy.unshareableReason(["Set-Cookie": "a=b"]) == "Set-Cookie")
        #expect(SharedResponsePolicy.unshareableReason(["Cache-Control": "max-age=0, Private"]) == "Cache-Control: private")
        #expect(SharedResponsePolicy.unshareableReason(["Cache-Control": "private=\"X-A\""]) == "Cache-Control: private")
        #expect(SharedResponsePolicy.unshareableReason(["cache-control": "no-store"]) == "Cache-Control: no-store")
        #expect(SharedResponsePolicy.unshareableReason(["Vary": "Accept, *"]) == "Vary: *")
        #expect(SharedResponsePolicy.unshareableReason(["Cache-Control": "public, max-age=60", "Vary": "Accept"]) == nil)
        #expect(SharedResponsePolicy.unshareableReason(["Cache-Control": "no-cache"]) == nil)
    }
}

@Suite struct ErrorBodyTests {
    @Test func codesAndEscaping() {
        #expect(ErrorBody.json(.notFound, requestID: "abc") == #"{"error":"not_found","request_id":"abc"}"#)
        #expect(ErrorBody.json(.badGateway, requestID: "a\"b\\c\n\u{1}") ==
            #"{"error":"bad_gateway","request_id":"a\"b\\c\n\u0001"}"#)
        #expect(ErrorBody.escape("é€\u{7F}\u{2028}x\u{2029}") == #"é€\u007f\u2028x\u2029"#)
        #expect(ErrorBody.escape("plain-id-0123") == "plain-id-0123")
        #expect(ErrorBody.bytes(.forbidden, requestID: "q\"1") == Array(ErrorBody.json(.forbidden, requestID: "q\"1").utf8))
        #expect(GatewayErrorCode.allCases.map(\.rawValue) == ["not_found", "method_not_allowed", "unauthorized",
            "forbidden", "bad_request", "payload_too_large", "too_many_requests", "bad_gateway", "service_unavailable",
            "gateway_timeout", "upstream_auth_failed"])
        #expect(GatewayErrorCode.allCases.map(\.status) == [404, 405, 401, 403, 400, 413, 429, 502, 503, 504, 502])
    }
}

@Suite struct RetryAfterTests {
    @Test func wholeSecondsRoundedUpAtLeastOne() {
        #expect(RetryAfter.value(.milliseconds(1)) == "1")
        #expect(RetryAfter.value(.zero) == "1")
        #expect(RetryAfter.value(.seconds(7)) == "7")
        #expect(RetryAfter.value(.milliseconds(7001)) == "8")
    }
}

@Suite struct StubLatencyTests {
    static func milliseconds(_ duration: Duration) -> Double { duration.seconds * 1000 }

    func stats(_ config: StubLatencyConfig, seed: UInt64 = 1, count: Int = 10_000) -> (mean: Double, sd: Double, min: Double, max: Double) {
        var sampler = StubLatency(config, seed: seed)
        let values = (0..<count).map { _ in Self.milliseconds(sampler.sample()) }
        let mean = values.reduce(0, +) / Double(count)
        let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count)
        return (mean, variance.squareRoot(), values.min() ?? 0, values.max() ?? 0)
    }

    @Test func fixed() {
        let s = stats(.fixed(.milliseconds(50)), count: 100)
        #expect(s.min == 50 && s.max == 50)
    }

    @Test func uniformMeanAndBounds() {
        let s = stats(.uniform(min: .milliseconds(10), max: .milliseconds(30)))
        #expect(abs(s.mean - 20) < 0.5)
        #expect(s.min >= 10 && s.max <= 30)
        #expect(abs(s.sd - 20 / 12.0.squareRoot()) < 0.3)
    }

    @Test func normalMeanAndStddev() {
        let s = stats(.normal(mean: .milliseconds(200), stddev: .milliseconds(50), min: nil, max: nil))
        #expect(abs(s.mean - 200) < 2.5)
        #expect(abs(s.sd - 50) < 2.5)
    }

    @Test func normalIsClampedAtZeroAndBounds() {
        let s = stats(.normal(mean: .milliseconds(1), stddev: .milliseconds(100), min: nil, max: nil))
        #expect(s.min >= 0)
        let bounded = stats(.normal(mean: .milliseconds(100), stddev: .milliseconds(100), min: .milliseconds(50),
                                    max: .milliseconds(120)))
        #expect(bounded.min >= 49.999_999 && bounded.max <= 120.000_001)
    }

    /// Log-normal: the median is `median`, the natural logarithms have standard deviation `sigma`, and the tail is
    /// long (the 99th percentile is `median × e^(2.326 × sigma)`), within the bounds when given.
    @Test func lognormalMedianSigmaAndTail() {
        var sampler = StubLatency(.lognormal(median: .milliseconds(80), sigma: 0.5, min: nil, max: nil), seed: 7)
        let values = (0..<20_000).map { _ in Self.milliseconds(sampler.sample()) }.sorted()
        let median = values[values.count / 2]
        let p99 = values[values.count * 99 / 100]
        #expect(abs(median - 80) < 2, "median \(median)")
        #expect(abs(p99 - 80 * exp(2.326 * 0.5)) < 15, "p99 \(p99)")
        let logs = values.map { log($0) }
        let mean = logs.reduce(0, +) / Double(logs.count)
        let squares: Double = logs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
        let sd = (squares / Double(logs.count)).squareRoot()
        #expect(abs(sd - 0.5) < 0.02, "sigma \(sd)")
        #expect(values.first! > 0)

        let bounded = stats(.lognormal(median: .milliseconds(80), sigma: 1, min: .milliseconds(20),
                                       max: .milliseconds(300)))
        #expect(bounded.min >= 19.999_999 && bounded.max <= 300.000_001)
        #expect(stats(.lognormal(median: .milliseconds(80), sigma: 0, min: nil, max: nil), count: 100).max == 80)
    }

    @Test func deterministicWithASeed() {
        var a = StubLatency(.normal(mean: .milliseconds(5), stddev: .milliseconds(2), min: nil, max: nil), seed: 99)
        var b = StubLatency(.normal(mean: .milliseconds(5), stddev: .milliseconds(2), min: nil, max: nil), seed: 99)
        var c = StubLatency(.normal(mean: .milliseconds(5), stddev: .milliseconds(2), min: nil, max: nil), seed: 100)
        let first = (0..<100).map { _ in a.sample() }
        #expect(first == (0..<100).map { _ in b.sample() })
        #expect(first != (0..<100).map { _ in c.sample() })
    }

    @Test func stubDelayWithoutLatencyIsFixed() {
        var stub = StubConfig()
        stub.delay = .milliseconds(20)
        var sampler = StubLatency(stub: stub, seed: 1)
        #expect(sampler.sample() == .milliseconds(20))
    }
}

@Suite struct TraceContextTests {
    @Test func theTraceIDOfAValidTraceparentOnly() {
        func id(_ value: String) -> String? { TraceContext.traceID(in: ["traceparent": value]) }
        #expect(id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(id("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later") == "4bf92f3577b34da6a3ce929d0e0e4736",
                "a later version may add fields")
        #expect(TraceContext.traceID(in: [:]) == nil)
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",   // version 00 has no more fields
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",         // all-zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",         // all-zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",         // forbidden version
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",         // upper case
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",          // short
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"},{\"x\":\"", // JSON in the value
            "",
        ] {
            #expect(id(bad) == nil, "\(bad)")
        }
    }
}
