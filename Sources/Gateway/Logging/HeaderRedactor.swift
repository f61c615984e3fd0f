import HTTPWire

/// Replaces secret values before anything is logged: header values by name (case-insensitive), and query parameters
/// whose names commonly carry credentials.
package struct HeaderRedactor: Sendable {
    package static let placeholder = "[REDACTED]"
    /// Query parameter names whose values are redacted (compared case-insensitively).
    package static let sensitiveQueryParameters = [
        "token", "access_token", "api_key", "apikey", "key", "password",
        "secret"
    ]

    /// Lower-cased header names.
    package let names: Set<String>

    /// `names`: the `logging.redact_headers` list.
    package init(names: [String] = LoggingConfig.defaultRedactHeaders) {
        self.names = Set(names.map { $0.lowercased() })
    }

    package func shouldRedact(name: String) -> Bool { names.contains(name.lowercased()) }

    /// The headers with every listed field's value replaced by `[REDACTED]` (names and order kept).
    package func redact(_ headers: HTTPFields) -> HTTPFields {
        HTTPFields(
            headers.map { field in
                (field.name, shouldRedact(name: field.name) ? HeaderRedactor.placeholder : field.value)
            })
    }

    /// `value`, or `[REDACTED]` when `name` is listed.
    package func redact(name: String, value: String) -> String {
        shouldRedact(name: name) ? HeaderRedactor.placeholder : value
    }

    /// A target or URL with the values of sensitive query parameters replaced (`?token=[REDACTED]&a=1`). The path and
    /// other parameters are unchanged. A parameter name is compared after percent-decoding.
    package static func redactQuery(in target: String) -> String {
        let hasQuery = target.utf8.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: "?")) }
        guard hasQuery ?? true, let mark = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: mark)...]
        var fragment = ""
        var queryPart = query
        if let hash = query.firstIndex(of: "#") {
            fragment = String(query[hash...])
            queryPart = query[..<hash]
        }
        let parameters = queryPart.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
            let pieces = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecoded(pieces.first ?? "").lowercased()
            let plain = name.replacingPlus()
            guard sensitiveQueryParameters.contains(plain) || sensitiveQueryParameters.contains(name) else {
                return String(parameter)
            }
            return String(pieces.first ?? "") + "=" + placeholder
        }
        return String(target[...mark]) + parameters.joined(separator: "&") + fragment
    }

    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
                let high = PathNormalizer.hexValue(iterator[iterator.startIndex]),
                let low = PathNormalizer.hexValue(iterator[iterator.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func replacingPlus() -> String {
        String(map { $0 == "+" ? " " : $0 }).trimmingSpaces()
    }
}
