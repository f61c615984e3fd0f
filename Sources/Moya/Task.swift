import Foundation

/// Swift Concurrency's `Task`, which Moya's `Task` enum shadows in code that imports Moya.
///
/// Write `AsyncTask { ... }` (or `_Concurrency.Task { ... }`) where Swift's task is meant in a file that imports Moya.
public typealias AsyncTask = _Concurrency.Task

/// Represents an HTTP task: what a request carries besides its URL, method and headers.
///
/// `Endpoint.urlRequest()` encodes it: a body, URL parameters, or both. Upload tasks send a file or a multipart form
/// as the body, and download tasks move the response body to a file.
public enum Task {

    /// A request with no additional data.
    case requestPlain

    /// A request body set with data (no `Content-Type` is added).
    case requestData(Data)

    /// A request body set with an `Encodable` value, encoded as JSON with sorted keys; `Content-Type:
    /// application/json` is set unless the request has one. Encoding errors become `MoyaError.encodableMapping`.
    case requestJSONEncodable(Encodable)

    /// A request body set with an `Encodable` value and a custom `JSONEncoder`.
    case requestCustomJSONEncodable(Encodable, encoder: JSONEncoder)

    /// A request with parameters encoded by a ``ParameterEncoding`` (into the URL or the body, as the encoding says).
    /// Encoding errors become `MoyaError.parameterEncoding`.
    case requestParameters(parameters: [String: Any], encoding: ParameterEncoding)

    /// A request body set with data, combined with URL parameters encoded into the query string.
    case requestCompositeData(bodyData: Data, urlParameters: [String: Any])

    /// A request body set with encoded parameters, combined with URL parameters encoded into the query string.
    ///
    /// A `URLEncoding` body encoding must have the `.httpBody` destination; any other fails the request with
    /// `MoyaError.parameterEncoding(MoyaRequestError.compositeBodyEncodingNotHTTPBody)`.
    case requestCompositeParameters(
        bodyParameters: [String: Any], bodyEncoding: ParameterEncoding, urlParameters: [String: Any])

    /// A file upload task: the file is streamed from disk as the request body.
    case uploadFile(URL)

    /// A "multipart/form-data" upload task; the body is encoded while it is sent. The method must be POST, PUT, PATCH
    /// or CONNECT and the form must have parts.
    case uploadMultipartFormData(MultipartFormData)

    /// A "multipart/form-data" upload task of the given parts.
    @available(*, deprecated, message: "use `uploadMultipartFormData(MultipartFormData)` instead")
    case uploadMultipart([MultipartFormBodyPart])

    /// A "multipart/form-data" upload task combined with URL parameters encoded into the query string.
    case uploadCompositeMultipartFormData(MultipartFormData, urlParameters: [String: Any])

    /// A "multipart/form-data" upload task of the given parts, combined with URL parameters.
    @available(
        *, deprecated, message: "use `uploadCompositeMultipartFormData(MultipartFormData, urlParameters:)` instead"
    )
    case uploadCompositeMultipart([MultipartFormBodyPart], urlParameters: [String: Any])

    /// A file download task: the response body is moved where the ``DownloadDestination`` says, and the
    /// response's `data` is empty.
    case downloadDestination(DownloadDestination)

    /// A file download task to a destination with extra parameters using the given encoding.
    case downloadParameters(parameters: [String: Any], encoding: ParameterEncoding, destination: DownloadDestination)
}

extension Task {
    /// The multipart form this task uploads, if it is one of the multipart cases (deprecated cases included).
    var multipartFormData: MultipartFormData? {
        switch self {
        case .uploadMultipartFormData(let form), .uploadCompositeMultipartFormData(let form, _):
            return form
        case .requestPlain, .requestData, .requestJSONEncodable, .requestCustomJSONEncodable, .requestParameters,
            .requestCompositeData, .requestCompositeParameters, .uploadFile, .downloadDestination, .downloadParameters:
            // Not multipart; answered without reflecting on the deprecated cases (Mirror is costly per request).
            return nil
        default:
            return DeprecatedTaskAccess.multipart(of: self)?.parts.map { MultipartFormData(parts: $0) } ?? nil
        }
    }

    /// The URL parameters of a composite multipart task (deprecated case included).
    var multipartURLParameters: [String: Any]? {
        if case .uploadCompositeMultipartFormData(_, let parameters) = self { return parameters }
        if multipartFormData == nil { return nil }
        return DeprecatedTaskAccess.multipart(of: self)?.urlParameters
    }
}

/// Reads the deprecated multipart cases without deprecation warnings in the module's own code.
enum DeprecatedTaskAccess {
    static func multipart(of task: Task) -> (parts: [MultipartFormBodyPart]?, urlParameters: [String: Any]?)? {
        guard let child = Mirror(reflecting: task).children.first else { return nil }
        switch child.label {
        case "uploadMultipart":
            return (child.value as? [MultipartFormBodyPart], nil)
        case "uploadCompositeMultipart":
            let values = Mirror(reflecting: child.value).children.map(\.value)
            guard values.count == 2 else { return nil }
            return (values[0] as? [MultipartFormBodyPart], values[1] as? [String: Any])
        default:
            return nil
        }
    }
}
