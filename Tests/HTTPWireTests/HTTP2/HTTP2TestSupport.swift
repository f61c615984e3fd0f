@testable import HTTPWire

/// A client session and a server session wired back to back in memory.
final class H2Pair {
    let client: HTTP2Session
    let server: HTTP2Session
    var clientEvents: [HTTP2Event] = []
    var serverEvents: [HTTP2Event] = []

    init(client clientSettings: HTTP2Settings = HTTP2Settings(), server serverSettings: HTTP2Settings = HTTP2Settings())
        throws
    {
        client = try HTTP2Session(role: .client, settings: clientSettings)
        server = try HTTP2Session(role: .server, settings: serverSettings)
    }

    /// Moves bytes both ways until neither side has anything to write; collects events.
    func pump(maxRounds: Int = 10_000) throws {
        for _ in 0..<maxRounds {
            let toServer = try client.pendingOutput()
            if !toServer.isEmpty { try server.feed(toServer) }
            let toClient = try server.pendingOutput()
            if !toClient.isEmpty { try client.feed(toClient) }
            collect()
            if toServer.isEmpty && toClient.isEmpty { return }
        }
    }

    /// Collects events, leaving out `.remoteSettingsChanged` (tested separately).
    func collect() {
        while let event = client.nextEvent() {
            if event != .remoteSettingsChanged { clientEvents.append(event) }
        }
        while let event = server.nextEvent() {
            if event != .remoteSettingsChanged { serverEvents.append(event) }
        }
    }

    func takeServerEvents() -> [HTTP2Event] {
        defer { serverEvents = [] }
        return serverEvents
    }

    func takeClientEvents() -> [HTTP2Event] {
        defer { clientEvents = [] }
        return clientEvents
    }
}

extension [HTTP2Event] {
    var requests: [(Int32, HTTP2ReceivedRequest, Bool)] {
        compactMap { if case .request(let id, let head, let end) = $0 { (id, head, end) } else { nil } }
    }

    func body(of streamID: Int32) -> [UInt8] {
        flatMap { event -> [UInt8] in
            switch event {
            case .requestBody(let id, let bytes) where id == streamID: bytes
            case .responseBody(let id, let bytes) where id == streamID: bytes
            default: []
            }
        }
    }

    func responses() -> [(Int32, HTTPResponseHead)] {
        compactMap { if case .response(let id, let head, _) = $0 { (id, head) } else { nil } }
    }

    func contains(_ event: HTTP2Event) -> Bool { contains { $0 == event } }
}

/// Hand-built HTTP/2 frames for hostile input.
enum RawH2 {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static let data: UInt8 = 0, headers: UInt8 = 1, rstStream: UInt8 = 3, settings: UInt8 = 4, ping: UInt8 = 6,
        goaway: UInt8 = 7, windowUpdate: UInt8 = 8, continuation: UInt8 = 9
    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4, ack: UInt8 = 0x1

    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        let length = payload.count
        var out: [UInt8] = [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
        out += be32(stream & 0x7fff_ffff)
        return out + payload
    }

    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// HPACK integer with an `prefixBits`-bit prefix; `first` holds the bits above the prefix.
    static func hpackInt(_ value: Int, prefixBits: Int, first: UInt8 = 0) -> [UInt8] {
        let max = (1 << prefixBits) - 1
        if value < max { return [first | UInt8(value)] }
        var out: [UInt8] = [first | UInt8(max)]
        var rest = value - max
        while rest >= 128 {
            out.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        out.append(UInt8(rest))
        return out
    }

    static func hpackString(_ bytes: [UInt8]) -> [UInt8] {
        hpackInt(bytes.count, prefixBits: 7) + bytes
    }

    /// "Literal header field without indexing, new name" for each pair (no Huffman, no dynamic table).
    static func hpack(_ fields: [(String, String)]) -> [UInt8] {
        fields.flatMap { [0x00] + hpackString(Array($0.0.utf8)) + hpackString(Array($0.1.utf8)) }
    }

    static func hpackBytes(_ fields: [([UInt8], [UInt8])]) -> [UInt8] {
        fields.flatMap { [0x00] + hpackString($0.0) + hpackString($0.1) }
    }

    static func settingsFrame(_ entries: [(UInt16, UInt32)] = []) -> [UInt8] {
        frame(type: settings, payload: entries.flatMap { [UInt8($0.0 >> 8), UInt8($0.0 & 0xff)] + be32($0.1) })
    }

    static func get(stream: UInt32, path: String = "/", extra: [(String, String)] = [], endStream: Bool = true)
        -> [UInt8]
    {
        let fields = [(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", path)] + extra
        return frame(
            type: headers, flags: endHeaders | (endStream ? RawH2.endStream : 0), stream: stream, payload: hpack(fields)
        )
    }

    /// The client side of a connection: preface and an empty SETTINGS.
    static var clientStart: [UInt8] { preface + settingsFrame() }

    struct Frame: Equatable {
        var type: UInt8
        var flags: UInt8
        var stream: UInt32
        var payload: [UInt8]

        var errorCode: UInt32? {
            switch type {
            case RawH2.rstStream where payload.count >= 4: return u32(payload, 0)
            case RawH2.goaway where payload.count >= 8: return u32(payload, 4)
            default: return nil
            }
        }
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    /// Parses server output (no preface) into frames.
    static func parse(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var index = 0
        while index + 9 <= bytes.count {
            let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            guard index + 9 + length <= bytes.count else { break }
            frames.append(
                Frame(
                    type: bytes[index + 3], flags: bytes[index + 4],
                    stream: u32(bytes, index + 5) & 0x7fff_ffff,
                    payload: Array(bytes[(index + 9)..<(index + 9 + length)])))
            index += 9 + length
        }
        return frames
    }
}

/// A server session fed raw bytes.
final class RawServer {
    let server: HTTP2Session
    var events: [HTTP2Event] = []
    var output: [UInt8] = []

    init(settings: HTTP2Settings = HTTP2Settings()) throws {
        server = try HTTP2Session(role: .server, settings: settings)
    }

    func send(_ bytes: [UInt8]) throws(HTTP2Error) {
        try server.feed(bytes)
        try server.drainOutput(into: &output)
        while let event = server.nextEvent() { events.append(event) }
    }

    var frames: [RawH2.Frame] { RawH2.parse(output) }

    func resets(stream: UInt32) -> [UInt32] {
        frames.filter { $0.type == RawH2.rstStream && $0.stream == stream }.compactMap(\.errorCode)
    }

    var goaways: [RawH2.Frame] { frames.filter { $0.type == RawH2.goaway } }
}
