@testable import HTTPWire

/// A tiny deterministic generator so that random splits are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

/// The `Host: localhost\r\n` line used by most cases.
let hostLine = "Host: localhost\r\n"

/// Splits `input` into pieces: whole (nil), one byte at a time (`[1]`), or at the given piece sizes, cycling.
func pieces(_ input: [UInt8], sizes: [Int]?) -> [[UInt8]] {
    guard let sizes, !sizes.isEmpty else { return [input] }
    var result: [[UInt8]] = []
    var index = 0
    var turn = 0
    while index < input.count {
        let size = max(1, sizes[turn % sizes.count])
        let end = min(input.count, index + size)
        result.append(Array(input[index..<end]))
        index = end
        turn += 1
    }
    return result
}

/// Random piece sizes (1...maxPiece) from a seeded generator.
func randomSizes(seed: UInt64, count: Int = 64, maxPiece: Int = 17) -> [Int] {
    var generator = SplitMix64(seed: seed)
    return (0..<count).map { _ in Int.random(in: 1...maxPiece, using: &generator) }
}

/// Merges consecutive `.body` events so that event lists compare equal however the bytes were split.
func coalesced(_ events: [HTTP1RequestEvent]) -> [HTTP1RequestEvent] {
    var result: [HTTP1RequestEvent] = []
    for event in events {
        if case .body(let more) = event, case .body(let previous)? = result.last {
            result[result.count - 1] = .body(previous + more)
        } else if case .body(let more) = event, more.isEmpty {
            continue
        } else {
            result.append(event)
        }
    }
    return result
}

func coalesced(_ events: [HTTP1ResponseEvent]) -> [HTTP1ResponseEvent] {
    var result: [HTTP1ResponseEvent] = []
    for event in events {
        if case .body(let more) = event, case .body(let previous)? = result.last {
            result[result.count - 1] = .body(previous + more)
        } else {
            result.append(event)
        }
    }
    return result
}

/// Feeds `input` in pieces, draining events after each piece; stops at the first error. Body events are coalesced.
func requestEvents(
    _ input: [UInt8], sizes: [Int]? = nil, limits: HTTP1ParserLimits = .init()
) -> [HTTP1RequestEvent] {
    var parser = HTTP1RequestParser(limits: limits)
    var events: [HTTP1RequestEvent] = []
    for piece in pieces(input, sizes: sizes) {
        parser.append(piece)
        while let event = parser.next() {
            events.append(event)
            if case .error = event { return coalesced(events) }
        }
    }
    return coalesced(events)
}

/// The status of the error an input ends with, if any.
func errorStatus(_ events: [HTTP1RequestEvent]) -> Int? {
    if case .error(let error)? = events.last { return error.status }
    return nil
}

func headCount(_ events: [HTTP1RequestEvent]) -> Int {
    events.reduce(0) { count, event in
        if case .head = event { return count + 1 }
        return count
    }
}

/// Feeds a response in pieces after `expectResponse(to: method)`; optionally reports EOF at the end.
func responseEvents(
    _ input: [UInt8], method: HTTPMethod = .get, sizes: [Int]? = nil, close: Bool = false,
    limits: HTTP1ResponseParser.Limits = .init(), upgrade: Bool = false
) -> (events: [HTTP1ResponseEvent], parser: HTTP1ResponseParser) {
    var parser = HTTP1ResponseParser(limits: limits)
    parser.expectResponse(to: method, upgrade: upgrade)
    var events: [HTTP1ResponseEvent] = []
    func drain() -> Bool {
        while let event = parser.next() {
            events.append(event)
            if case .error = event { return false }
        }
        return true
    }
    for piece in pieces(input, sizes: sizes) {
        parser.append(piece)
        if !drain() { return (coalesced(events), parser) }
    }
    if close, let event = parser.connectionClosed() {
        events.append(event)
        if case .error = event { return (coalesced(events), parser) }
        _ = drain()
    }
    return (coalesced(events), parser)
}
