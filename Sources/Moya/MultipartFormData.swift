import Foundation

/// Multipart form data: a boundary and the body parts of a `multipart/form-data` upload.
///
/// Upload it with `Task.uploadMultipartFormData(_:)`; an array literal of ``MultipartFormBodyPart``s makes one with a
/// random boundary. The body is encoded while it is sent, file and stream parts read in chunks.
public struct MultipartFormData: Hashable, ExpressibleByArrayLiteral {

    /// Method to provide the form data.
    public enum FormDataProvider: Hashable {
        /// The part's content is held in memory.
        case data(Foundation.Data)
        /// The part's content is read from a file URL when the request is sent.
        case file(URL)
        /// The part's content is read from a stream of the given length when the request is sent.
        case stream(InputStream, UInt64)

        /// Whether two providers are the same: equal data, equal file URLs, or the same stream object and length.
        ///
        /// - Parameters:
        ///   - lhs: A provider.
        ///   - rhs: Another provider.
        /// - Returns: `true` when they provide the same content.
        public static func == (lhs: FormDataProvider, rhs: FormDataProvider) -> Bool {
            switch (lhs, rhs) {
            case (.data(let lhsData), .data(let rhsData)):
                return lhsData == rhsData
            case (.file(let lhsURL), .file(let rhsURL)):
                return lhsURL == rhsURL
            case (.stream(let lhsStream, let lhsLength), .stream(let rhsStream, let rhsLength)):
                return lhsStream === rhsStream && lhsLength == rhsLength
            default:
                return false
            }
        }

        /// Hashes what equality compares (a stream by its identity).
        ///
        /// - Parameter hasher: The hasher to feed.
        public func hash(into hasher: inout Hasher) {
            switch self {
            case .data(let data):
                hasher.combine(0)
                hasher.combine(data)
            case .file(let url):
                hasher.combine(1)
                hasher.combine(url)
            case .stream(let stream, let length):
                hasher.combine(2)
                hasher.combine(ObjectIdentifier(stream))
                hasher.combine(length)
            }
        }
    }

    /// The file manager used to inspect file parts.
    public let fileManager: FileManager

    /// The boundary; `nil` means a random `alamofire.boundary.%08x%08x` one is made when encoding.
    public let boundary: String?

    /// The body parts, in order.
    public let parts: [MultipartFormBodyPart]

    /// Creates a form from its parts.
    ///
    /// - Parameters:
    ///   - fileManager: The file manager used to inspect file parts.
    ///   - boundary: The boundary; nil for a random one.
    ///   - parts: The body parts, in order.
    public init(fileManager: FileManager = .default, boundary: String? = nil, parts: [MultipartFormBodyPart]) {
        self.fileManager = fileManager
        self.boundary = boundary
        self.parts = parts
    }

    /// A form of the given parts, with a random boundary.
    ///
    /// - Parameter elements: The body parts, in order.
    public init(arrayLiteral elements: MultipartFormBodyPart...) {
        self.init(parts: elements)
    }

    /// Whether two forms have the same file manager, boundary and parts.
    ///
    /// - Parameters:
    ///   - lhs: A form.
    ///   - rhs: Another form.
    /// - Returns: `true` when they are the same form.
    public static func == (lhs: MultipartFormData, rhs: MultipartFormData) -> Bool {
        lhs.fileManager === rhs.fileManager && lhs.boundary == rhs.boundary && lhs.parts == rhs.parts
    }

    /// Hashes the boundary and the parts.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(boundary)
        hasher.combine(parts)
    }
}

/// Represents a body part of a "multipart/form-data" request.
public struct MultipartFormBodyPart: Hashable {

    /// Creates a body part.
    ///
    /// - Parameters:
    ///   - provider: Where the part's content comes from.
    ///   - name: The form field's name.
    ///   - fileName: The file name sent for the part. For a file part without both a file name and a MIME type,
    ///     the file's own name and the type of its extension are sent.
    ///   - mimeType: The part's `Content-Type`.
    public init(
        provider: MultipartFormData.FormDataProvider, name: String, fileName: String? = nil, mimeType: String? = nil
    ) {
        self.provider = provider
        self.name = name
        self.fileName = fileName
        self.mimeType = mimeType
    }

    /// The method being used for providing form data.
    public let provider: MultipartFormData.FormDataProvider

    /// The form field's name.
    public let name: String

    /// The file name.
    public let fileName: String?

    /// The MIME type.
    public let mimeType: String?
}

// MARK: - RequestMultipartFormData appending

extension RequestMultipartFormData {
    /// Appends the parts of a Moya form the way Moya feeds Alamofire: data parts as given; file parts with the given
    /// file name and MIME type only when both are set (otherwise both come from the URL); stream parts with `""` for
    /// a missing file name or MIME type.
    func applyMoyaMultipartFormData(_ multipartBody: [MultipartFormBodyPart]) {
        for bodyPart in multipartBody {
            switch bodyPart.provider {
            case .data(let data):
                append(data, withName: bodyPart.name, fileName: bodyPart.fileName, mimeType: bodyPart.mimeType)
            case .file(let url):
                if let fileName = bodyPart.fileName, let mimeType = bodyPart.mimeType {
                    append(url, withName: bodyPart.name, fileName: fileName, mimeType: mimeType)
                } else {
                    append(url, withName: bodyPart.name)
                }
            case .stream(let stream, let length):
                append(
                    stream, withLength: length, name: bodyPart.name, fileName: bodyPart.fileName ?? "",
                    mimeType: bodyPart.mimeType ?? "")
            }
        }
    }

    /// Appends every part of `form`.
    func applyMoyaMultipartFormData(_ form: MultipartFormData) {
        applyMoyaMultipartFormData(form.parts)
    }
}
