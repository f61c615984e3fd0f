import NetCore
import Testing

@testable import Gateway

/// The drain's Close handshake of a tunnel, direction by direction: the Close goes at the next frame boundary, never
/// inside a frame, and nothing of the other end follows it.
@Suite struct WebSocketTunnelClosingTests {
    static let message = WebSocketFrameScannerTests.frame(length: 300, masked: false)
    static let next = WebSocketFrameScannerTests.frame(length: 10, masked: false, opcode: 0x1)

    /// The upstream writer's next two pulls are the Close, then the end.
    static func expectCloseThenEnd(
        _ closing: inout TunnelClosing, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .send = closing.beforeReadingClient() else {
            Issue.record("expected the Close", sourceLocation: sourceLocation)
            return
        }
        if case .end = closing.beforeReadingClient() { return }
        Issue.record("expected the end", sourceLocation: sourceLocation)
    }

    @Test func theClientGetsItsCloseAfterTheFrameInFlight() async throws {
        let client = ByteStream()
        var closing = TunnelClosing()
        closing.client = client
        let room = closing.forwardToClient(Array(Self.message.prefix(100)), into: client)
        #expect(room)
        let waking = closing.goAway()
        #expect(!waking, "the upstream writer is not waiting")
        #expect(!client.isFinished, "a frame is in flight: no Close inside it")
        _ = closing.forwardToClient(Array(Self.message.dropFirst(100)) + Self.next, into: client)
        #expect(client.isFinished)
        _ = closing.forwardToClient(Self.next, into: client)
        let received = try await client.collect(upTo: 1 << 20)
        #expect(received == Self.message + WebSocketGoingAway.toClient, "the frame's rest, the Close, nothing after")
    }

    @Test func aClientBetweenFramesGetsItsCloseAtOnce() async throws {
        let client = ByteStream()
        var closing = TunnelClosing()
        closing.client = client
        _ = closing.forwardToClient(Self.next, into: client)
        _ = closing.goAway()
        #expect(client.isFinished)
        let again = closing.goAway()
        #expect(!again, "a second call changes nothing")
        #expect(try await client.collect(upTo: 1 << 20) == Self.next + WebSocketGoingAway.toClient)
    }

    @Test func theUpstreamGetsAMaskedCloseAfterTheFrameInFlight() throws {
        let masked = WebSocketFrameScannerTests.frame(length: 200, masked: true)
        var closing = TunnelClosing()
        guard case .read = closing.beforeReadingClient() else {
            Issue.record("expected a read")
            return
        }
        let start = closing.forwardToUpstream(Array(masked.prefix(50)))
        #expect(start == Array(masked.prefix(50)))
        let midFrame = closing.goAway()
        #expect(!midFrame, "mid-frame: the Close waits for the frame's end")
        guard case .read = closing.beforeReadingClient() else {
            Issue.record("expected a read")
            return
        }
        let rest = closing.forwardToUpstream(Array(masked.dropFirst(50)) + Self.next)
        #expect(rest == Array(masked.dropFirst(50)), "the frame's rest, not the next frame")
        guard case .send(let close) = closing.beforeReadingClient() else {
            Issue.record("expected the Close")
            return
        }
        #expect(close.count == 2 + 4 + WebSocketGoingAway.payload.count && close[0] == 0x88 && close[1] == 0x80 | 12)
        let key = Array(close[2..<6])
        #expect(close.dropFirst(6).enumerated().map { $0.element ^ key[$0.offset % 4] } == WebSocketGoingAway.payload)
        guard case .end = closing.beforeReadingClient() else {
            Issue.record("expected the end")
            return
        }
        let afterClose = closing.forwardToUpstream(Self.next)
        #expect(afterClose == nil, "the client's own Close in reply is dropped")
    }

    @Test func aWriterWaitingBetweenFramesIsWokenForTheClose() {
        var closing = TunnelClosing()
        guard case .read = closing.beforeReadingClient() else {
            Issue.record("expected a read")
            return
        }
        let first = closing.forwardToUpstream(Self.next)
        #expect(first == Self.next)
        guard case .read = closing.beforeReadingClient() else {
            Issue.record("expected a read")
            return
        }
        let woken = closing.goAway()
        #expect(woken, "waiting in the client stream at a boundary: wake it")
        // Bytes the client sent meanwhile are past the boundary: dropped, the Close goes first.
        let meanwhile = closing.forwardToUpstream(Self.next)
        #expect(meanwhile == nil)
        Self.expectCloseThenEnd(&closing)
    }

    @Test func aClientStreamEndingOnceTheCloseIsDueStillSendsIt() {
        var closing = TunnelClosing()
        guard case .read = closing.beforeReadingClient() else {
            Issue.record("expected a read")
            return
        }
        let endedRelaying = closing.clientStreamEnded()
        #expect(!endedRelaying, "relaying: the stream's end is the tunnel's end, with no Close")
        guard case .read = closing.beforeReadingClient() else {
            Issue.record("expected a read")
            return
        }
        _ = closing.goAway()
        let endedGoingAway = closing.clientStreamEnded()
        #expect(endedGoingAway, "the Close was due: it goes before the end")
        Self.expectCloseThenEnd(&closing)
    }

    /// The race an HTTP/2 client's tunnel runs in a drain: the Close ends the client's response, and the server aborts
    /// the request side at once, which can reach the upstream writer before the drain's own wake-up does. The upstream
    /// still gets its Close, and then the end.
    @Test func theUpstreamGetsItsCloseWhenTheClientSideIsAbortedFirst() async throws {
        let source = ByteStream()
        let tunnel = WebSocketTunnel(
            source: source, idleTimeout: nil, upstreamFields: [:], key: nil, registry: nil)
        let stream = tunnel.makeStream()
        let pulled = Task {
            var iterator = stream.makeAsyncIterator()
            let first = try await iterator.next()
            let second = try await iterator.next()
            return (first, second)
        }
        var waiting = false
        for _ in 0..<500 where !waiting {
            try await Task.sleep(for: .milliseconds(2))
            waiting = tunnel.closing.withLock { $0.readingClient }
        }
        #expect(waiting, "the writer waits for the client's bytes")
        _ = tunnel.closing.withLock { $0.goAway() }
        source.fail(ByteStreamError.aborted)
        let (close, end) = try await pulled.value
        #expect(close?.first == 0x88, "the Close, not the abort: \(close ?? [])")
        #expect(end == nil)
    }
}
