import HTTPWire

/// Represents an HTTP method (`GET`, `POST`, ...). The same value type the transport uses; raw values are upper case.
public typealias Method = HTTPWire.HTTPMethod

extension Method {
    /// Whether a request with this method can carry a multipart body: true for POST, PUT, PATCH and CONNECT.
    public var supportsMultipart: Bool {
        switch self {
        case .post, .put, .patch, .connect: return true
        default: return false
        }
    }
}
