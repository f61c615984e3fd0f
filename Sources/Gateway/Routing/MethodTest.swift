import HTTPWire

/// Tests of a request's method on the hot path, with the method's length compared first: a method of another length
/// (most requests' `GET`) needs no string comparison (`HTTPMethod`'s `==` compares its raw strings, and two different
/// strings cost a call into the standard library's comparison).
enum MethodTest {
    /// Whether `method` is `HEAD`.
    static func isHead(_ method: HTTPMethod) -> Bool {
        method.rawValue.utf8.count == 4 && method == .head
    }

    /// Whether `method` is `CONNECT`.
    static func isConnect(_ method: HTTPMethod) -> Bool {
        method.rawValue.utf8.count == 7 && method == .connect
    }

    /// Whether `method` is `TRACE` or `CONNECT`.
    static func isTraceOrConnect(_ method: HTTPMethod) -> Bool {
        switch method.rawValue.utf8.count {
        case 5: return method == .trace
        case 7: return method == .connect
        default: return false
        }
    }
}
