import HTTPWire
import Testing

@testable import Gateway

/// The headers built for an upstream from the client's, the upstream's configured headers and the forwarding headers.
@Suite struct ProxyHeadersTests {
    /// No peer or client address known: the request id, the protocol, the client's `Host` and `Via`.
    private let forwarding = Forwarding(
        peer: nil, clientAddress: nil, isTLS: false, requestID: "r1", version: .http1_1)

    private func pairs(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name): \($0.value)" } }

    @Test func aCallSentAloneGetsEveryHeaderInOneListInTheClientsOrder() {
        let client = HTTPFields([
            ("Host", "gw"), ("Accept", "a/b"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "1"),
            ("X-Api-Key", "k"), ("Authorization", "Bearer c"), ("Accept", "c/d"),
            ("X-Request-Id", "spoof"), ("Cookie", "a=1"), ("cookie", "b=2"), ("TE", "trailers")
        ])
        let (stable, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: "x-api-key", configured: HTTPFields(), dropAuthorization: true, varyHeaders: [],
            coalescing: false, forwarding: forwarding)
        #expect(stable.isEmpty, "nothing goes through the endpoint's dictionary")
        #expect(
            pairs(perRequest) == [
                "Accept: a/b", "Accept: c/d", "Cookie: a=1; b=2",
                "X-Request-Id: r1", "X-Forwarded-Proto: http", "X-Forwarded-Host: gw", "Via: 1.1 moya-gateway"
            ],
            "hop-by-hop, listed, API-key, gateway-owned and replaced Authorization fields dropped; cookies joined")
    }

    @Test func aClientWhoseFieldsAreAllDroppedSendsTheForwardingFieldsAlone() {
        let client = HTTPFields([("Host", "gw"), ("Connection", "keep-alive"), ("X-Request-Id", "spoof")])
        let (stable, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: nil, configured: HTTPFields(), dropAuthorization: false, varyHeaders: [],
            coalescing: false, forwarding: forwarding)
        #expect(stable.isEmpty)
        #expect(
            pairs(perRequest) == [
                "X-Request-Id: r1", "X-Forwarded-Proto: http", "X-Forwarded-Host: gw", "Via: 1.1 moya-gateway"
            ])
    }

    @Test func configuredHeadersReplaceTheClientsAndForwardingHeadersReplaceConfiguredOnes() {
        let configured: HTTPFields = ["x-team": "gateway", "via": "custom", "X-Static": "s"]
        let client = HTTPFields([("X-Team", "client"), ("Accept", "*/*")])
        let (_, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: nil, configured: configured, dropAuthorization: false, varyHeaders: [],
            coalescing: false, forwarding: forwarding)
        #expect(
            pairs(perRequest) == [
                "Accept: */*", "x-team: gateway", "X-Static: s",
                "X-Request-Id: r1", "X-Forwarded-Proto: http", "Via: 1.1 moya-gateway"
            ])
    }

    @Test func aCoalescibleCallKeepsItsIdentityInTheEndpointAndTheRestPerCaller() {
        let configured: HTTPFields = ["X-Static": "s"]
        let client = HTTPFields([
            ("Authorization", "Bearer c"), ("Accept-Language", "fr"), ("Accept", "a"),
            ("Cookie", "a=1"), ("Cookie", "b=2"), ("X-Static", "client")
        ])
        let (stable, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: nil, configured: configured, dropAuthorization: false,
            varyHeaders: ["accept-language"],
            coalescing: true, forwarding: forwarding)
        #expect(stable == ["Authorization": "Bearer c", "Accept-Language": "fr", "Cookie": "a=1; b=2", "X-Static": "s"])
        #expect(
            pairs(perRequest) == ["Accept: a", "X-Request-Id: r1", "X-Forwarded-Proto: http", "Via: 1.1 moya-gateway"])
    }

    @Test func mergingIntoARequestsFieldsReplacesNamesInAnySpellingAndJoinsRepeats() {
        var fields = ["via": "custom", "X-Team": "a", "accept": "x"]
        ProxyHeaders.merge(
            HTTPFields([
                ("Via", "1.1 moya-gateway"), ("Accept", "a"), ("Accept", "b"), ("Cookie", "a=1"), ("Cookie", "b=2")
            ]),
            into: &fields)
        #expect(fields == ["X-Team": "a", "Via": "1.1 moya-gateway", "Accept": "a, b", "Cookie": "a=1; b=2"])
    }

    @Test func viaNamesTheProtocolEachMessageArrivedIn() {
        #expect(ProxyHeaders.via(.http1_1) == "1.1 moya-gateway")
        #expect(ProxyHeaders.via(.http1_0) == "1.0 moya-gateway")
        #expect(ProxyHeaders.via(.http2) == "2 moya-gateway")
        let upstream: HTTPFields = ["Via": "1.1 cache", "Content-Length": "2"]
        let returned = ProxyHeaders.downstream(from: upstream, received: .http2, requestID: "r")
        #expect(
            returned["Via"] == ["1.1 cache", "2 moya-gateway"], "after the upstream's own, in the upstream's protocol")
        let forwarded = ProxyHeaders.forwarding(
            client: ["Via": "1.0 edge", "Host": "h"], peer: "10.0.0.1",
            clientAddress: "10.0.0.1", isTLS: false, requestID: "r", version: .http2)
        #expect(forwarded["Via"] == ["1.0 edge, 2 moya-gateway"])
    }

    @Test func theClientsOwnRealIPIsReplacedByTheAddressTheGatewayResolved() {
        let client: HTTPFields = ["X-Real-IP": "1.2.3.4", "x-real-ip": "5.6.7.8", "Host": "h"]
        let forwarding = Forwarding(
            peer: "10.0.0.1", clientAddress: "203.0.113.9", isTLS: true, requestID: "r", version: .http1_1)
        #expect(
            ProxyHeaders.forwarding(
                client: client, peer: "10.0.0.1", clientAddress: "203.0.113.9",
                isTLS: true, requestID: "r", version: .http1_1)["X-Real-IP"] == ["203.0.113.9"])
        let (_, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: nil, configured: [:],
            dropAuthorization: false, varyHeaders: [], coalescing: false,
            forwarding: forwarding)
        #expect(perRequest["X-Real-IP"] == ["203.0.113.9"], "none of the client's values is forwarded: \(perRequest)")
        let unknown = ProxyHeaders.forwarding(
            client: client, peer: nil, clientAddress: nil, isTLS: false, requestID: "r",
            version: .http1_1)
        #expect(unknown["X-Real-IP"].isEmpty, "no address, no field")
    }

    @Test func theFramingLengthIsOneValueOfDigitsWithoutTransferEncoding() {
        #expect(ProxyHeaders.framingLength(of: ["Content-Length": "1048576"]) == "1048576")
        #expect(ProxyHeaders.framingLength(of: ["Content-Length": "0"]) == "0")
        #expect(ProxyHeaders.framingLength(of: HTTPFields()) == nil)
        #expect(ProxyHeaders.framingLength(of: HTTPFields([("Content-Length", "5"), ("Content-Length", "5")])) == nil)
        #expect(ProxyHeaders.framingLength(of: ["Content-Length": "5, 5"]) == nil)
        #expect(ProxyHeaders.framingLength(of: ["Content-Length": "-1"]) == nil)
        #expect(ProxyHeaders.framingLength(of: ["Content-Length": "+5"]) == nil)
        #expect(ProxyHeaders.framingLength(of: ["Content-Length": String(repeating: "9", count: 20)]) == nil)
        #expect(
            ProxyHeaders.framingLength(of: HTTPFields([("Content-Length", "5"), ("Transfer-Encoding", "chunked")]))
                == nil)
    }

    /// `Connection: keep-alive` or `close`, in any case, lists no field to drop; a value that only resembles them is a
    /// field name, dropped.
    @Test func connectionKeepAliveOrCloseInAnyCaseListsNothing() {
        for value in ["keep-alive", "Keep-Alive", "KEEP-ALIVE", "close", "Close", "cLoSe"] {
            let upstream = HTTPFields([("Connection", value), ("Close", "1"), ("X-Keep", "2")])
            #expect(
                pairs(ProxyHeaders.downstream(from: upstream)) == ["Close: 1", "X-Keep: 2", "Via: 1.1 moya-gateway"],
                "Connection: \(value)")
        }
        for value in ["keep-alivf", "Keep_Alive", "keep-alive2", "clos", "closed", "closf"] {
            let upstream = HTTPFields([("Connection", value), (value, "1"), ("X-Keep", "2")])
            #expect(
                pairs(ProxyHeaders.downstream(from: upstream)) == ["X-Keep: 2", "Via: 1.1 moya-gateway"],
                "Connection: \(value)")
        }
    }

    @Test func aKnownNameListedInConnectionIsDroppedInBothDirections() {
        let client = HTTPFields([("Connection", "Accept, x-hop"), ("Accept", "a"), ("X-Hop", "1"), ("User-Agent", "u")])
        let (_, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: nil, configured: HTTPFields(), dropAuthorization: false, varyHeaders: [],
            coalescing: false, forwarding: forwarding)
        #expect(
            pairs(perRequest) == [
                "User-Agent: u", "X-Request-Id: r1", "X-Forwarded-Proto: http", "Via: 1.1 moya-gateway"
            ])
        let upstream = HTTPFields([
            ("Connection", "ETag"), ("ETag", "\"1\""), ("X-Accel-Buffering", "no"), ("x-accel-buffering", "no"),
            ("Content-Type", "t")
        ])
        #expect(
            pairs(ProxyHeaders.downstream(from: upstream, requestID: "r")) == [
                "Content-Type: t", "Via: 1.1 moya-gateway", "X-Request-Id: r"
            ])
    }

    @Test func forwardingChainsAndAConfiguredFieldOnlyTheFieldsSentReplace() {
        let client = HTTPFields([("X-Forwarded-For", "1.1.1.1"), ("x-forwarded-for", "2.2.2.2"), ("Via", "1.0 edge")])
        let withPeer = ProxyHeaders.forwarding(
            client: client, peer: "10.0.0.1", clientAddress: nil, isTLS: false, requestID: "r", version: .http1_1)
        #expect(withPeer["X-Forwarded-For"] == ["1.1.1.1, 2.2.2.2, 10.0.0.1"])
        #expect(withPeer["Via"] == ["1.0 edge, 1.1 moya-gateway"])
        #expect(withPeer["X-Forwarded-Host"].isEmpty, "no Host, no X-Forwarded-Host")
        // Neither a peer nor a chain: no X-Forwarded-For is sent, so the configured one stays.
        let configured: HTTPFields = ["X-Forwarded-For": "configured", "X-Forwarded-Host": "configured-host"]
        let (_, perRequest) = ProxyHeaders.upstreamHeaders(
            from: HTTPFields([("Accept", "a")]), apiKeyHeader: nil, configured: configured, dropAuthorization: false,
            varyHeaders: [], coalescing: false, forwarding: forwarding)
        #expect(perRequest["X-Forwarded-For"] == ["configured"])
        #expect(perRequest["X-Forwarded-Host"] == ["configured-host"])
    }

    @Test func anAPIKeyHeaderOutsideTheKnownNamesIsDroppedInAnySpelling() {
        let client = HTTPFields([("X-Team-Key", "k"), ("x-team-key", "k2"), ("X-Api-Key", "kept"), ("Accept", "a")])
        let (_, perRequest) = ProxyHeaders.upstreamHeaders(
            from: client, apiKeyHeader: "X-TEAM-KEY", configured: HTTPFields(), dropAuthorization: false,
            varyHeaders: [], coalescing: false, forwarding: forwarding)
        #expect(perRequest["X-Team-Key"].isEmpty)
        #expect(perRequest["X-Api-Key"] == ["kept"], "only the configured key header is the client's credential")
    }
}
