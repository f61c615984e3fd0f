import HTTPWire

/// The W3C Trace Context (`traceparent`) of a request, read for the access log: the gateway forwards the header as it
/// came (it is an end-to-end field), and logs its trace id so that a line can be found from a trace and back.
enum TraceContext {
    /// The trace id of a valid `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, lower-case, ids not all zeros; a
    /// later version may append fields after a `-`), or nil.
    static func traceID(in headers: HTTPFields) -> String? {
        guard let value = headers.first(.traceparent) else { return nil }
        let bytes = Array(value.utf8)
        guard bytes.count >= 55, bytes.count == 55 || bytes[55] == UInt8(ascii: "-"),
            bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-"),
            isHex(bytes[0..<2]), isHex(bytes[3..<35]), isHex(bytes[36..<52]), isHex(bytes[53..<55]),
            bytes[0..<2] != [UInt8(ascii: "f"), UInt8(ascii: "f")],
            bytes[3..<35].contains(where: { $0 != UInt8(ascii: "0") }),
            bytes[36..<52].contains(where: { $0 != UInt8(ascii: "0") })
        else { return nil }
        // Version 00 has exactly these fields.
        if bytes[0..<2] == [UInt8(ascii: "0"), UInt8(ascii: "0")] && bytes.count != 55 { return nil }
        return String(decoding: bytes[3..<35], as: UTF8.self)
    }

    private static func isHex(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
