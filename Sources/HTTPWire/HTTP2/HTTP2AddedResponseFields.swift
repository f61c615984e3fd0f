import CNghttp2

/// Fields an HTTP/2 server adds to a response head as it sends it (see
/// ``HTTP2Session/sendResponse(streamID:head:added:endStream:)``): written into the HEADERS frame after the head's own
/// fields, in this order (`x-request-id`, `date`, `content-length`), so that the head's list is not copied to add them.
package struct HTTP2AddedResponseFields {
    /// `x-request-id`; left out when it holds CR, LF or NUL.
    package var requestID: String?
    /// `date`: the server's cached `Date` value.
    package var date: String?
    /// `content-length`.
    package var contentLength: Int?

    package init() {}

    /// How many fields are set.
    var count: Int { (requestID == nil ? 0 : 1) + (date == nil ? 0 : 1) + (contentLength == nil ? 0 : 1) }

    /// Room for the values' bytes.
    var valueBytes: Int { (requestID?.utf8.count ?? 0) + (date?.utf8.count ?? 0) + (contentLength == nil ? 0 : 20) }

    /// Describes the set fields in `nva` at `used` and on (counting them in `used`), their values copied to `values`,
    /// which has room for ``valueBytes`` bytes and lives as long as `nva`.
    func write(into nva: UnsafeMutablePointer<nghttp2_nv>, values: UnsafeMutablePointer<UInt8>, used: inout Int) {
        var offset = 0
        func add(_ name: StaticString, token: HTTPFieldName, valueCount: Int) {
            nva[used] = nghttp2_nv(
                name: UnsafeMutablePointer(mutating: name.utf8Start), value: values + offset,
                namelen: name.utf8CodeUnitCount, valuelen: valueCount, flags: HTTP2Session.indexingFlags(token))
            used += 1
            offset += valueCount
        }
        if var requestID {
            let valid: Bool = requestID.withUTF8 { bytes in
                guard HTTP1Grammar.allBytes(bytes, { $0 != 0 && $0 != 0x0a && $0 != 0x0d }) else { return false }
                if let source = bytes.baseAddress { (values + offset).update(from: source, count: bytes.count) }
                return true
            }
            if valid { add("x-request-id", token: .xRequestId, valueCount: requestID.utf8.count) }
        }
        if var date {
            date.withUTF8 { bytes in
                if let source = bytes.baseAddress { (values + offset).update(from: source, count: bytes.count) }
            }
            add("date", token: .date, valueCount: date.utf8.count)
        }
        if let contentLength {
            add(
                "content-length", token: .contentLength,
                valueCount: HTTP1Serializer.writeDecimal(contentLength, to: values + offset))
        }
    }
}
