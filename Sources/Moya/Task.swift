import Foundation

/// Swift Concurrency's `Task`, which Moya's `Task` enum shadows in code that imports Moya.
public typealias AsyncTask = _Concurrency.Task

/// Represents an HTTP task.
public enum Task {

    /// A request with no additional data.
    case requestPlain

    /// A requests body set with data.
    case requestData(Data)

    /// A request body set with `Encodable` type
    case requestJSONEncodable(Encodable)

    /// A request body set with `Encodable` type and custom encoder
    case requestCustomJSONEncodable(Encodable, encoder: JSONEncoder)

    /// A requests body set with encoded parameters.
    case requestParameters(parameters: [String: Any], encoding: ParameterEncoding)

    /// A requests body set with data, combined with url parameters.
    case requestCompositeData(bodyData: Data, urlParameters: [String: Any])

    /// A requests body set with encoded parameters combined with url parameters.
    case requestCompositeParameters(bodyParameters: [String: Any], bodyEncoding: ParameterEncoding, urlParameters: [String: Any])

    /// A file upload task.
    case uploadFile(URL)

    /// A "multipart/form-data" upload task.
    case uploadMultipartFormData(MultipartFormData)

    /// A "multipart/form-data" upload task.
    @available(*, deprecated, message: "use `uploadMultipartFormData(MultipartFormData)` instead")
    case uploadMultipart([MultipartFormBodyPart])

    /// A "multipart/form-data" upload task  combined with url parameters.
    case uploadCompositeMultipartFormData(MultipartFormData, urlParameters: [String: Any])

    /// A "multipart/form-data" upload task  combined with url parameters.
    @available(*, deprecated, message: "use `uploadCompositeMultipartFormData(MultipartFormData, urlParameters:)` instead")
    case uploadCompositeMultipart([MultipartFormBodyPart], urlParameters: [String: Any])

    /// A file download task to a destination.
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
