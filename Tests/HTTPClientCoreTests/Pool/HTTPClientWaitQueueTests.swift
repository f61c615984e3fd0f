import HTTPWire
import Locking
import NetCore
import Testing

@testable import HTTPClientCore

/// The queue of exchanges waiting for a connection or an HTTP/2 stream (``HTTPClientWaitQueue``), without sockets: real
/// exchanges whose callers wait for their results, as a pool holds them. First in, first out; finished ones passed
/// over; the bounded enqueue; the fair-share pick; wait expiry.
@Suite struct HTTPClientWaitQueueTests {
    /// What each exchange's caller got: `ok` (succeeded) or the error's description.
    typealias Outcomes = [Int: String]

    /// The callers that have handed their exchanges a continuation (under the lock: the test reads the exchanges after).
    private final class Counter: Sendable {
        let count = Locked(0)
    }

    /// Runs `body` on exchanges made for `callers` (a caller key each, or nil) whose callers wait for their results, then
    /// fails those still waiting with `cancelled`, and returns what each caller got.
    private static func withWaitingExchanges(
        callers: [Int?], configuration: HTTPClient.Configuration = HTTPClient.Configuration(), deadline: UInt64? = nil,
        _ body: ([HTTPClientExchange]) -> Void
    ) async throws -> Outcomes {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        var exchanges: [HTTPClientExchange] = []
        for caller in callers {
            var request = try HTTPClientRequest(url: "http://127.0.0.1:1/")
            request.callerKey = caller
            exchanges.append(
                HTTPClientExchange(
                    request: request, body: [], streamedBody: nil, progress: HTTPClientProgress(),
                    configuration: configuration, loop: group.loops[0], startedAt: EventLoop.now(), deadline: deadline))
        }
        let begun = Counter()
        let all = UncheckedSendable(exchanges)
        return await withTaskGroup(of: (Int, String).self) { tasks in
            for index in exchanges.indices {
                tasks.addTask {
                    do {
                        _ = try await withUnsafeThrowingContinuation { continuation in
                            _ = all.value[index].begin(delivering: .collected(continuation))
                            begun.count.withLock { $0 += 1 }
                        }
                        return (index, "ok")
                    } catch {
                        return (index, "\(error)")
                    }
                }
            }
            while begun.count.withLock({ $0 }) < exchanges.count { await Task.yield() }
            body(exchanges)
            for exchange in exchanges where !exchange.isFinished { exchange.fail(.cancelled) }
            var outcomes: Outcomes = [:]
            for await (index, outcome) in tasks { outcomes[index] = outcome }
            return outcomes
        }
    }

    @Test func firstInFirstOutPassingOverFinishedOnes() async throws {
        let outcomes = try await Self.withWaitingExchanges(callers: [nil, nil, nil, nil]) { exchanges in
            var queue = HTTPClientWaitQueue()
            for exchange in exchanges { queue.enqueue(exchange, limit: 10) }
            #expect(queue.count == 4)
            exchanges[1].cancel()  // fails it where it waits
            #expect(queue.count == 4, "a finished exchange stays until it is passed over")
            let first = queue.popFirst()
            #expect(first === exchanges[0])
            let second = queue.popFirst()
            #expect(second === exchanges[2])
            if let second { queue.prepend(second) }
            let again = queue.popFirst()
            #expect(again === exchanges[2], "put back in front")
            let last = queue.popFirst()
            #expect(last === exchanges[3])
            let none = queue.popFirst()
            #expect(none == nil)
            #expect(queue.isEmpty)
        }
        #expect(outcomes[1] == "\(HTTPClientError.cancelled)")
    }

    @Test func enqueueRefusesPastTheLimit() async throws {
        let outcomes = try await Self.withWaitingExchanges(callers: [nil, nil, nil]) { exchanges in
            var queue = HTTPClientWaitQueue()
            let accepted = exchanges.map { queue.enqueue($0, limit: 2) }
            #expect(accepted == [true, true, false])
            #expect(queue.count == 2)
            #expect(queue.takeAll().map { ObjectIdentifier($0) } == exchanges[0..<2].map { ObjectIdentifier($0) })
            #expect(queue.isEmpty)
        }
        #expect(outcomes[2] == "\(HTTPClientError.poolExhausted)")
        #expect(outcomes[0] == "\(HTTPClientError.cancelled)")
    }

    @Test func fairSharePassesOverCallersAtTheirShare() async throws {
        _ = try await Self.withWaitingExchanges(callers: [1, 1, 2, nil, 1]) { exchanges in
            var queue = HTTPClientWaitQueue()
            for exchange in exchanges { queue.enqueue(exchange, limit: 10) }
            var asked = 0
            var waits = 0
            let held = { () -> [Int: Int] in
                asked += 1
                return [1: 1]
            }
            // Caller 1 holds its share (1): its exchanges are passed over for caller 2's, each counted once.
            let caller2 = queue.popFirst(fairShare: 1, held: held, onFairShareWait: { waits += 1 })
            #expect(caller2 === exchanges[2])
            #expect(asked == 1, "the holdings are asked once per pick")
            #expect(waits == 2)
            #expect(exchanges[0].passedOverForShare && exchanges[1].passedOverForShare)
            // Then the one without a caller; the two passed over already are not counted again.
            let noCaller = queue.popFirst(fairShare: 1, held: held, onFairShareWait: { waits += 1 })
            #expect(noCaller === exchanges[3])
            #expect(waits == 2)
            // Only caller 1's left: the first of them, passing nobody over.
            let caller1 = queue.popFirst(fairShare: 1, held: held, onFairShareWait: { waits += 1 })
            #expect(caller1 === exchanges[0])
            #expect(waits == 2)
            #expect(!exchanges[4].passedOverForShare)
            // Under its share, caller 1 takes its turn in order.
            let caller1Again = queue.popFirst(fairShare: 2, held: held, onFairShareWait: { waits += 1 })
            #expect(caller1Again === exchanges[1])
            #expect(queue.count == 1)
        }
    }

    @Test func fairShareAsksNothingWithoutCallersAndEmptiesAFinishedQueue() async throws {
        _ = try await Self.withWaitingExchanges(callers: [nil, 7]) { exchanges in
            var queue = HTTPClientWaitQueue()
            for exchange in exchanges { queue.enqueue(exchange, limit: 10) }
            var asked = 0
            let held = { () -> [Int: Int] in
                asked += 1
                return [:]
            }
            let noCaller = queue.popFirst(fairShare: 1, held: held, onFairShareWait: nil)
            #expect(noCaller === exchanges[0])
            #expect(asked == 0)
            exchanges[1].cancel()
            let none = queue.popFirst(fairShare: 1, held: held, onFairShareWait: nil)
            #expect(none == nil)
            #expect(queue.isEmpty, "finished exchanges dropped")
        }
    }

    @Test func expiredWaitsFailAndLeaveTheQueue() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.maxWaitTime = .seconds(1)
        let start = EventLoop.now()
        let outcomes = try await Self.withWaitingExchanges(callers: [nil, nil], configuration: configuration) {
            exchanges in
            var queue = HTTPClientWaitQueue()
            for exchange in exchanges { queue.enqueue(exchange, limit: 10) }
            queue.expireWaits(now: start)
            #expect(queue.count == 2, "nothing expired yet")
            queue.expireWaits(now: EventLoop.now() + 2_000_000_000)
            #expect(queue.isEmpty)
        }
        #expect(outcomes[0] == "\(HTTPClientError.poolWaitTimeout)")
        #expect(outcomes[1] == "\(HTTPClientError.poolWaitTimeout)")
    }

    @Test func aDeadlineBeforeTheWaitLimitIsAResponseTimeout() async throws {
        let deadline = EventLoop.now() + 500_000_000
        let outcomes = try await Self.withWaitingExchanges(callers: [nil], deadline: deadline) { exchanges in
            var queue = HTTPClientWaitQueue()
            queue.enqueue(exchanges[0], limit: 10)
            queue.expireWaits(now: deadline)
            #expect(queue.isEmpty)
        }
        #expect(outcomes[0] == "\(HTTPClientError.responseTimeout)")
    }
}
