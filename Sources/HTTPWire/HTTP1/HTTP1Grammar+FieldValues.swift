/// Field values of RFC 9110 / RFC 9112 the HTTP/1 parsers check: `Host`, and the lists of comma-separated elements
/// (`Connection`, `Transfer-Encoding`).
extension HTTP1Grammar {
    /// Whether `value` is `uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2): a reg-name, IPv4 address or
    /// bracketed IP literal, with an optional decimal port up to 65535. An empty value is valid (RFC 9112 §3.2).
    static func isValidHost(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { isValidHost(bytes: $0) }
    }

    /// ``isValidHost(_:)`` for a value's bytes.
    static func isValidHost(bytes: UnsafeRawBufferPointer) -> Bool {
        isValidHost(bytes: bytes.assumingMemoryBound(to: UInt8.self))
    }

    private static func isValidHost(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return true }
        var index = 0
        if base[0] == 0x5B {  // "["
            index = 1
            while index < count, base[index] != 0x5D {
                let byte = base[index]
                guard hexValue(byte) != nil || byte == colon || byte == 0x2E || isUnreserved(byte) || isSubDelim(byte)
                else { return false }
                index += 1
            }
            guard index < count, index > 1 else { return false }
            index += 1  // "]"
        } else {
            // One class test per byte while they are reg-name bytes; a pct-encoded byte, the port's colon or a byte
            // that may not be there stops the run.
            while index < count {
                let byte = base[index]
                if isRegNameChar(byte) {
                    index &+= 1
                    continue
                }
                guard byte == 0x25 else { break }  // pct-encoded
                guard index + 2 < count, hexValue(base[index + 1]) != nil, hexValue(base[index + 2]) != nil
                else { return false }
                index += 3
            }
        }
        if index == count { return true }
        guard base[index] == colon else { return false }
        index += 1
        // The port: up to five decimal digits, at most 65535 (none is valid too).
        guard count - index <= 5 else { return false }
        var port = 0
        while index < count {
            let digit = base[index] &- 0x30
            guard digit < 10 else { return false }
            port = port &* 10 &+ Int(digit)
            index += 1
        }
        return port <= 65535
    }

    /// `unreserved / sub-delims` (RFC 3986 §3.2.2: a reg-name's bytes besides pct-encoded), one class test.
    @inline(__always)
    static func isRegNameChar(_ byte: UInt8) -> Bool {
        isInClass(byte, low: 0x2bff_7fd2_0000_0000, high: 0x47ff_fffe_87ff_fffe)
    }

    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: return true
        default: return false
        }
    }

    @inline(__always)
    static func isSubDelim(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true
        default: return false
        }
    }

    /// The comma-separated elements of a list-valued field, trimmed of OWS, as byte arrays (empty ones kept).
    static func listElements(_ value: String) -> [ArraySlice<UInt8>] {
        listElements(Array(value.utf8))
    }

    /// ``listElements(_:)`` of a value's bytes.
    static func listElements(_ value: UnsafeRawBufferPointer) -> [ArraySlice<UInt8>] {
        listElements(Array(value))
    }

    private static func listElements(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var elements: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index <= bytes.count {
            if index == bytes.count || bytes[index] == 0x2C {
                var lower = start
                var upper = index
                while lower < upper, bytes[lower] == sp || bytes[lower] == htab { lower += 1 }
                while upper > lower, bytes[upper - 1] == sp || bytes[upper - 1] == htab { upper -= 1 }
                elements.append(bytes[lower..<upper])
                start = index + 1
            }
            index += 1
        }
        return elements
    }
}
