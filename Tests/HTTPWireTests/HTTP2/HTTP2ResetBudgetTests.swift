import Testing

@testable import HTTPWire

/// The rapid-reset budget, the RST_STREAM flood limit and the GOAWAYs that name why a connection ends
/// (reliability: RST-01 .. RST-05), as pure state machines and through a server session fed raw frames.
@Suite struct HTTP2ResetBudgetTests {
    static let second: UInt64 = 1_000_000_000

    @Test func youngCancellationsBeyondCompletionsReachTheLimitThenExhaustIt() {
        var budget = HTTP2ResetBudget(limit: 3, prematureAge: .seconds(1))
        for _ in 0..<3 { #expect(!run { budget.streamCancelled(openedAt: 10, now: 20) }) }
        #expect(budget.isAtLimit, "at the limit: new streams are held back")
        budget.streamCompleted()
        #expect(!budget.isAtLimit, "a completed response pays one cancellation back")
        #expect(!run { budget.streamCancelled(openedAt: 10, now: 20) })
        #expect(run { budget.streamCancelled(openedAt: 10, now: 20) }, "one past the limit: GOAWAY")
    }

    @Test func oldStreamsDoNotCount() {
        var budget = HTTP2ResetBudget(limit: 1, prematureAge: .milliseconds(500))
        for _ in 0..<100 { #expect(!run { budget.streamCancelled(openedAt: 0, now: Self.second) }) }
        #expect(budget.debt == 0)
        #expect(!run { budget.streamCancelled(openedAt: Self.second, now: Self.second + 1) })
        #expect(run { budget.streamCancelled(openedAt: Self.second, now: Self.second + 1) })
    }

    @Test func completionsNeverBankCredit() {
        var budget = HTTP2ResetBudget(limit: 2, prematureAge: .seconds(1))
        for _ in 0..<50 { budget.streamCompleted() }
        #expect(budget.debt == 0)
        #expect(!run { budget.streamCancelled(openedAt: 0, now: 1) })
        #expect(!run { budget.streamCancelled(openedAt: 0, now: 1) })
        #expect(run { budget.streamCancelled(openedAt: 0, now: 1) })
    }

    @Test func frameRateLimitAllowsABurstThenItsRate() {
        var limit = HTTP2FrameRateLimit(burst: 5, ratePerSecond: 2)
        for _ in 0..<5 { #expect(run { limit.take(now: 3 * Self.second) }) }
        #expect(!run { limit.take(now: 3 * Self.second + 1) })
        #expect(run { limit.take(now: 4 * Self.second) })
        #expect(run { limit.take(now: 4 * Self.second) })
        #expect(!run { limit.take(now: 4 * Self.second) })
        // Refilled to the burst at most, however long the pause.
        for _ in 0..<5 { #expect(run { limit.take(now: 1000 * Self.second) }) }
        #expect(!run { limit.take(now: 1000 * Self.second) })
    }

    /// The debug text of a GOAWAY frame.
    static func debug(_ frame: RawH2.Frame?) -> String {
        guard let frame, frame.payload.count >= 8 else { return "" }
        return String(decoding: frame.payload[8...], as: UTF8.self)
    }

    static func rst(_ id: UInt32) -> [UInt8] { RawH2.frame(type: RawH2.rstStream, stream: id, payload: RawH2.be32(8)) }

    /// RST-01: each reset in a read of its own (so the stream was surfaced before it): at the limit the session says
    /// new streams are to be held, one more cancellation gets GOAWAY(ENHANCE_YOUR_CALM) naming rapid reset, and later
    /// streams are not taken.
    @Test func resetsInReadsOfTheirOwnExhaustTheBudget() throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 10
        let raw = try RawServer(settings: settings)
        try raw.send(RawH2.clientStart + RawH2.frame(type: RawH2.settings, flags: RawH2.ack))
        for i in 0..<10 {
            let id = UInt32(1 + 2 * i)
            try raw.send(RawH2.get(stream: id))
            #expect(!raw.server.holdsNewStreams)
            try raw.send(Self.rst(id))
        }
        #expect(raw.server.holdsNewStreams, "10 cancelled, none completed")
        #expect(raw.goaways.isEmpty)
        try raw.send(RawH2.get(stream: 21))
        try raw.send(Self.rst(21))
        let goaway = try #require(raw.goaways.first)
        #expect(goaway.errorCode == HTTP2ErrorCode.enhanceYourCalm.rawValue)
        #expect(Self.debug(goaway).contains("rapid reset"), "\(Self.debug(goaway))")
        #expect(RawH2.u32(goaway.payload, 0) == 21, "last stream processed")
        #expect(raw.server.abuseGoAway?.errorCode == .enhanceYourCalm)
        try raw.send(RawH2.get(stream: 23))
        #expect(raw.events.requests.count == 11, "nothing above the GOAWAY's last stream is surfaced")
    }

    /// RST-02: completed responses pay cancellations back, so a client that cancels some and completes others is
    /// never told to go away.
    @Test func completedStreamsPayCancellationsBack() throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 4
        let raw = try RawServer(settings: settings)
        try raw.send(RawH2.clientStart + RawH2.frame(type: RawH2.settings, flags: RawH2.ack))
        var id: UInt32 = 1
        for _ in 0..<50 {
            try raw.send(RawH2.get(stream: id))
            try raw.server.sendResponse(streamID: Int32(id), head: HTTPResponseHead(status: 200), endStream: true)
            try raw.send([])
            try raw.send(RawH2.get(stream: id + 2))
            try raw.send(Self.rst(id + 2))
            id += 4
        }
        #expect(raw.goaways.isEmpty)
        #expect(!raw.server.holdsNewStreams)
    }

    /// RST-03: RST_STREAM frames beyond the flood limit, whatever they name, end the connection with a GOAWAY that
    /// says so; nothing the client sends after it is processed.
    @Test func resetFloodEndsWithANamedGoAway() throws {
        var settings = HTTP2Settings()
        settings.streamResetBurst = 20
        settings.streamResetRate = 1
        let raw = try RawServer(settings: settings)
        try raw.send(RawH2.clientStart + RawH2.get(stream: 1, endStream: false))
        for _ in 0..<30 { try raw.send(RawH2.frame(type: RawH2.rstStream, stream: 1, payload: RawH2.be32(8))) }
        let goaway = try #require(raw.goaways.first)
        #expect(goaway.errorCode == HTTP2ErrorCode.enhanceYourCalm.rawValue)
        #expect(Self.debug(goaway) == "RST_STREAM flood")
        #expect(raw.server.isFinished)
        try raw.send(RawH2.get(stream: 3))
        #expect(raw.events.requests.map(\.0) == [1])
    }

    /// RST-04: the CONTINUATION flood is fatal inside nghttp2, which sends nothing: the session gives the GOAWAY the
    /// server writes before it closes, with its reason.
    @Test func continuationFloodGetsANamedGoAway() throws {
        let raw = try RawServer()
        try raw.send(RawH2.clientStart)
        var bytes = RawH2.frame(
            type: RawH2.headers, stream: 1,
            payload: RawH2.hpack([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/")]))
        for i in 0..<100 {
            bytes += RawH2.frame(type: RawH2.continuation, stream: 1, payload: RawH2.hpack([("x-\(i)", "v")]))
        }
        do {
            try raw.send(bytes)
            Issue.record("CONTINUATION flood accepted")
        } catch {
            let frames = RawH2.parse(raw.server.goAwayFrame(after: error))
            #expect(frames.count == 1)
            #expect(frames.first?.type == RawH2.goaway)
            #expect(frames.first?.errorCode == HTTP2ErrorCode.enhanceYourCalm.rawValue)
            #expect(Self.debug(frames.first) == "CONTINUATION flood")
            #expect(raw.server.goAwayFrame(after: error).isEmpty, "only once")
        }
        let preface = try HTTP2Session(role: .server)
        do {
            try preface.feed(Array("GET / HTTP/1.1\r\n\r\n                ".utf8))
        } catch {
            #expect(preface.goAwayFrame(after: error).isEmpty, "no GOAWAY to a client that never spoke HTTP/2")
        }
    }

    /// RST-05: the floods nghttp2 leaves to the session end with GOAWAY(ENHANCE_YOUR_CALM) and a reason: empty DATA
    /// frames, and streams reset for malformed requests.
    @Test func otherFloodsNameTheirReason() throws {
        var settings = HTTP2Settings()
        settings.maxConsecutiveEmptyDataFrames = 10
        settings.maxPeerInducedResets = 10
        let empty = try RawServer(settings: settings)
        var bytes = RawH2.clientStart + RawH2.get(stream: 1, endStream: false)
        for _ in 0..<20 { bytes += RawH2.frame(type: RawH2.data, stream: 1) }
        try empty.send(bytes)
        #expect(Self.debug(empty.goaways.first) == "empty DATA frame flood")
        #expect(empty.server.isFinished)

        let malformed = try RawServer(settings: settings)
        bytes = RawH2.clientStart
        for i in 0..<20 { bytes += RawH2.get(stream: UInt32(1 + 2 * i), extra: [("X-Upper", "1")]) }
        try malformed.send(bytes)
        try malformed.send([])
        #expect(malformed.goaways.first?.errorCode == HTTP2ErrorCode.enhanceYourCalm.rawValue)
        #expect(Self.debug(malformed.goaways.first).contains("malformed"), "\(Self.debug(malformed.goaways.first))")
        #expect(malformed.server.isFinished)
    }
}

/// Runs a mutating check outside `#expect`, which cannot call mutating members itself.
private func run(_ body: () -> Bool) -> Bool { body() }
