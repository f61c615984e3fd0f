/// Represents the status codes a response must have for the request to succeed.
///
/// A response whose status is not accepted fails with `.underlying(MoyaError.statusCode(response), response)`, for
/// network and stubbed requests alike, so `error.response` is the response in both cases.
public enum ValidationType: Sendable {

    /// No validation.
    case none

    /// Validate success codes (only 2xx).
    case successCodes

    /// Validate success codes and redirection codes (only 2xx and 3xx).
    case successAndRedirectCodes

    /// Validate only the given status codes.
    case customCodes([Int])

    /// The list of HTTP status codes to validate; empty means no validation.
    var statusCodes: [Int] {
        switch self {
        case .successCodes:
            return Array(200..<300)
        case .successAndRedirectCodes:
            return Array(200..<400)
        case .customCodes(let codes):
            return codes
        case .none:
            return []
        }
    }

    /// Whether a response with `statusCode` passes this validation (without building `statusCodes`).
    func accepts(_ statusCode: Int) -> Bool {
        switch self {
        case .none: return true
        case .successCodes: return (200..<300).contains(statusCode)
        case .successAndRedirectCodes: return (200..<400).contains(statusCode)
        case .customCodes(let codes): return codes.isEmpty || codes.contains(statusCode)
        }
    }
}

extension ValidationType: Equatable {

    /// Whether two validation types are the same case (with the same codes for `.customCodes`).
    ///
    /// - Parameters:
    ///   - lhs: A validation type.
    ///   - rhs: Another validation type.
    /// - Returns: `true` when both are the same case with equal associated codes.
    public static func == (lhs: ValidationType, rhs: ValidationType) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none),
            (.successCodes, .successCodes),
            (.successAndRedirectCodes, .successAndRedirectCodes):
            return true
        case (.customCodes(let code1), .customCodes(let code2)):
            return code1 == code2
        default:
            return false
        }
    }
}
