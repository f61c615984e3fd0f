/// A message head assembled in a temporary region (on the stack when small) and appended to the output at once: the
/// status line, the fields and the lines a writer adds go in one pass, and the output array is grown and checked
/// once per head instead of once per line. The writer makes the region (`withUnsafeTemporaryAllocation`, sized with
/// the `...Capacity` helpers), writes the head and calls ``finish(into:)``. Every write checks its room and, when a
/// write would not fit (a wrong capacity, never input), the head fails as a serialization error instead of
/// overrunning.
package struct HTTP1HeadAssembly: ~Copyable {
    private let start: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// Bytes written so far.
    package private(set) var count = 0
    /// The first failure (an invalid field or status, or no room); nothing is appended to the output then.
    fileprivate var failure: HTTP1SerializationError?

    /// An empty head written into `region` (valid while the assembly is used).
    package init(_ region: UnsafeMutableBufferPointer<UInt8>) {
        start = region.baseAddress ?? UnsafeMutablePointer(bitPattern: 1).unsafelyUnwrapped
        capacity = region.baseAddress == nil ? 0 : region.count
    }

    /// Appends the head to `buffer` in one append; throws the first failure instead (and appends nothing).
    package consuming func finish(into buffer: inout [UInt8]) throws(HTTP1SerializationError) {
        if let failure { throw failure }
        buffer.append(contentsOf: UnsafeBufferPointer(start: start, count: count))
    }

    /// What ``appendFields(of:_:)`` does with a field, decided from its name's token.
    package enum FieldAction {
        /// Writes the field as it is (checked unless the HTTP/1 parser read it).
        case write
        /// Leaves the field out.
        case skip
    }

    /// The room a status line with the reason phrase `reason` takes at most (see
    /// ``appendStatusLine(status:reason:version:)``).
    package static func statusLineCapacity(reason: String) -> Int {
        17 &+ reason.utf8.count
    }

    /// The room a request line of `method` and `target` takes (see ``appendRequestLine(method:target:version:)``).
    package static func requestLineCapacity(method: HTTPMethod, target: String) -> Int {
        method.rawValue.utf8.count &+ target.utf8.count &+ 12
    }

    /// The room the line `name: value CRLF` takes (see ``appendField(name:value:)``).
    package static func fieldCapacity(name: String, value: String) -> Int {
        name.utf8.count &+ value.utf8.count &+ 4
    }

    /// The room `Content-Length: <length> CRLF` takes at most.
    package static let contentLengthCapacity = 40

    /// The room the lines of every field of `headers` take (`name: value CRLF` each).
    package static func fieldsCapacity(_ headers: HTTPFields) -> Int {
        headers.withRegions(ifEmpty: 0) { entries, _, header in
            var needed = 0
            for index in 0..<header.count { needed &+= entries[index].byteCount &+ 4 }
            return needed
        }
    }

    /// Whether `more` bytes fit; notes the failure when they do not.
    @inline(__always)
    private mutating func hasRoom(_ more: Int) -> Bool {
        if capacity &- count >= more { return true }
        if failure == nil { failure = HTTP1SerializationError(reason: "head larger than its reserved room") }
        return false
    }

    /// Appends `bytes` as they are (a whole line the caller made, such as a cached `Date` line).
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty, hasRoom(bytes.count) else { return }
        UnsafeMutableRawPointer(start + count).copyMemory(from: base, byteCount: bytes.count)
        count &+= bytes.count
    }

    /// Appends `bytes` as they are.
    package mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Appends a line known at compile time, as it is (it must end in CRLF and hold a valid field).
    package mutating func append(_ line: StaticString) {
        line.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends the status line of a head with `status`, `reason` and `version`, as
    /// ``HTTP1Serializer/writeStatusLine(_:into:)`` writes it (and fails as it does).
    package mutating func appendStatusLine(status: Int, reason: String, version: HTTPVersion) {
        if version == .http1_1, let line = HTTP1Serializer.commonStatusLine(status, reason: reason) {
            append(line)
            return
        }
        guard (100...999).contains(status) else {
            if failure == nil { failure = HTTP1SerializationError(reason: "status code is not three digits") }
            return
        }
        var reason = reason
        let written: Bool = reason.withUTF8 { reason in
            if let base = reason.baseAddress,
                !HTTP1Grammar.areFieldValueBytes(UnsafeRawPointer(base), count: reason.count)
            {
                return false
            }
            guard (0...9).contains(version.major), (0...9).contains(version.minor) else {
                if failure == nil { failure = HTTP1SerializationError(reason: "HTTP version is not single-digit") }
                return true
            }
            guard hasRoom(reason.count &+ 15) else { return true }
            let line = start + count
            let fixed: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (
                0x48, 0x54, 0x54, 0x50, 0x2F, 0x30 &+ UInt8(version.major), 0x2E,
                0x30 &+ UInt8(version.minor), HTTP1Grammar.sp, 0x30 &+ UInt8(status / 100),
                0x30 &+ UInt8(status / 10 % 10), 0x30 &+ UInt8(status % 10), HTTP1Grammar.sp
            )
            withUnsafeBytes(of: fixed) {
                UnsafeMutableRawPointer(line).copyMemory(from: $0.baseAddress.unsafelyUnwrapped, byteCount: 13)
            }
            if let base = reason.baseAddress { (line + 13).update(from: base, count: reason.count) }
            line[13 &+ reason.count] = HTTP1Grammar.cr
            line[14 &+ reason.count] = HTTP1Grammar.lf
            count &+= reason.count &+ 15
            return true
        }
        if !written, failure == nil {
            failure = HTTP1SerializationError(reason: "reason phrase contains control characters")
        }
    }

    /// Appends `method SP target SP HTTP/x.y CRLF`, checked and failing as
    /// ``HTTP1Serializer/writeRequestLine(method:target:version:into:)`` does.
    package mutating func appendRequestLine(method: HTTPMethod, target: String, version: HTTPVersion) {
        var methodText = method.rawValue
        var target = target
        // `withUTF8` reads a native string in place (and makes a bridged one contiguous first).
        let lineFailure: HTTP1SerializationError? = methodText.withUTF8 { method in
            target.withUTF8 { target in
                if let failure = HTTP1Serializer.requestLineFailure(method: method, target: target, version: version) {
                    return failure
                }
                guard hasRoom(method.count &+ target.count &+ 12) else { return nil }
                count &+= HTTP1Serializer.writeRequestLine(
                    method: method, target: target, version: version, to: start + count)
                return nil
            }
        }
        if let lineFailure, failure == nil { failure = lineFailure }
    }

    /// Appends `name: value CRLF`, checked and failing as ``HTTP1Serializer/writeField(name:value:into:)`` does.
    package mutating func appendField(name: String, value: String) {
        var name = name
        var value = value
        let fieldFailure: HTTP1SerializationError? = name.withUTF8 { name in
            guard HTTP1Grammar.isToken(name) else {
                return HTTP1SerializationError(reason: "header name is not a token")
            }
            return value.withUTF8 { appendField(checkedName: name, value: $0) }
        }
        if let fieldFailure, failure == nil { failure = fieldFailure }
    }

    /// Appends `name: value CRLF` for a name the caller writes, which must be a token (only the value is checked, and
    /// fails as ``appendField(name:value:)`` does).
    package mutating func appendField(knownName name: StaticString, value: String) {
        var value = value
        let fieldFailure = value.withUTF8 { value in
            appendField(
                checkedName: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value)
        }
        if let fieldFailure, failure == nil { failure = fieldFailure }
    }

    /// Appends `name: value CRLF` for a name known to be a token, once `value` is checked: the value's failure, or nil
    /// (a head out of room is noted by ``hasRoom(_:)``).
    @inline(__always)
    private mutating func appendField(checkedName name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
        -> HTTP1SerializationError?
    {
        if let base = value.baseAddress, !HTTP1Grammar.areFieldValueBytes(UnsafeRawPointer(base), count: value.count) {
            return HTTP1SerializationError(reason: "header value contains CR, LF, NUL or another control character")
        }
        guard hasRoom(name.count &+ value.count &+ 4) else { return nil }
        count &+= HTTP1Serializer.writeFieldLine(name: name, value: value, to: start + count)
        return nil
    }

    /// Appends `Content-Length: <length> CRLF`; a negative length is written as 0.
    package mutating func appendContentLength(_ length: Int) {
        guard hasRoom(Self.contentLengthCapacity) else { return }
        count &+= HTTP1Serializer.writeContentLengthLine(length, to: start + count)
    }

    /// Appends the line of each field of `headers` as `action` (given the field's token, in order) says: a field the
    /// HTTP/1 parser read is copied as it is, any other is checked as ``HTTP1Serializer/writeField(name:value:into:)``
    /// does. One pass over the fields.
    package mutating func appendFields(of headers: HTTPFields, _ action: (HTTPFieldName) -> FieldAction) {
        headers.withRegions(ifEmpty: ()) { entries, bytes, header in
            for index in 0..<header.count {
                let entry = entries[index]
                switch action(entry.token) {
                case .skip:
                    continue
                case .write:
                    if let fieldFailure = HTTP1Serializer.checkField(entry, bytes: bytes) {
                        if failure == nil { failure = fieldFailure }
                        return
                    }
                    guard hasRoom(entry.byteCount &+ 4) else { return }
                    count &+= HTTP1Serializer.writeFieldLine(entry, bytes: bytes, to: start + count)
                }
            }
        }
    }

    /// Appends the fields of a response head as an HTTP/1 server writes them, in one pass without a call per field:
    /// `Connection`, `Keep-Alive` and `Transfer-Encoding` are left out; `Content-Length` is left out when the status
    /// forbids a body (`forbidsBody`), the first one is written as `Content-Length: <bodyLength>` when `bodyLength` is
    /// given (an in-memory body's) and as it is otherwise, and later ones are left out; every other field is written as
    /// ``appendFields(of:_:)`` writes it. Returns whether a `Date` and a `Content-Length` field were written.
    package mutating func appendResponseFields(
        of headers: HTTPFields, forbidsBody: Bool, bodyLength: Int?
    ) -> (hasDate: Bool, hasLength: Bool) {
        headers.withRegions(ifEmpty: (false, false)) { entries, bytes, header in
            var hasDate = false
            var hasLength = false
            for index in 0..<header.count {
                let entry = entries[index]
                switch entry.token {
                case .contentLength:
                    if forbidsBody || hasLength { continue }
                    hasLength = true
                    if let bodyLength {
                        appendContentLength(bodyLength)
                        continue
                    }
                case .connection, .keepAlive, .transferEncoding:
                    continue
                case .date:
                    hasDate = true
                default:
                    break
                }
                if let fieldFailure = HTTP1Serializer.checkField(entry, bytes: bytes) {
                    if failure == nil { failure = fieldFailure }
                    break
                }
                guard hasRoom(entry.byteCount &+ 4) else { break }
                count &+= HTTP1Serializer.writeFieldLine(entry, bytes: bytes, to: start + count)
            }
            return (hasDate, hasLength)
        }
    }

    /// Appends the empty line that ends a head.
    package mutating func appendEndOfHead() {
        guard hasRoom(2) else { return }
        start[count] = HTTP1Grammar.cr
        start[count &+ 1] = HTTP1Grammar.lf
        count &+= 2
    }
}
