import HTTPWire

/// Header-name and value checks for the configuration: the wire's own rules (``HTTP1Grammar``), an RFC 9110 token
/// and a field value without control characters.
enum HeaderName {
    static func isValid(_ name: String) -> Bool {
        HTTP1Grammar.isToken(name.utf8)
    }

    static func isValidValue(_ value: String) -> Bool {
        HTTP1Grammar.allBytes(value.utf8, HTTP1Grammar.isFieldValueByte)
    }
}
