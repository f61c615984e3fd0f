import Foundation

/// The `multipart/form-data` encoder (Alamofire's `MultipartFormData`), producing byte-identical bodies:
///
/// `--b\r\n` headers `\r\n` data, `\r\n--b\r\n` between parts, `\r\n--b--\r\n` at the end; each part has
/// `Content-Disposition: form-data; name="n"[; filename="f"]` and `Content-Type: m` when a MIME type is set.
///
/// Bodies can be encoded in memory (`encode()`), written to a file, or streamed (`makeBodyStream()`), in which case
/// file and stream parts are read from disk in chunks while the request is sent.
open class RequestMultipartFormData: @unchecked Sendable {

    /// Errors found while appending or encoding parts.
    ///
    /// An error found while appending is reported by the first `encode()`, `writeEncodedData(to:)` or send.
    public enum EncodingError: Error, LocalizedError {
        /// A file part's URL is not a file URL.
        case bodyPartURLInvalid(url: URL)
        /// A file part's URL has no file name or no extension to take them from.
        case bodyPartFilenameInvalid(in: URL)
        /// A file part's file does not exist.
        case bodyPartFileNotReachable(at: URL)
        /// A file part's URL is a directory.
        case bodyPartFileIsDirectory(at: URL)
        /// A file part's size could not be read.
        case bodyPartFileSizeNotAvailable(at: URL)
        /// A file or stream part could not be read.
        case inputStreamReadFailed(error: Error)
        /// `writeEncodedData(to:)` was given a file that exists.
        case outputStreamFileAlreadyExists(at: URL)
        /// `writeEncodedData(to:)` could not write the file.
        case outputStreamWriteFailed(error: Error)

        /// A message saying which part or file failed, and how.
        public var errorDescription: String? {
            switch self {
            case .bodyPartURLInvalid(let url): return "The URL provided is not a file URL: \(url)"
            case .bodyPartFilenameInvalid(let url): return "The URL provided does not have a valid filename: \(url)"
            case .bodyPartFileNotReachable(let url): return "The URL provided is not reachable: \(url)"
            case .bodyPartFileIsDirectory(let url): return "The URL provided is a directory: \(url)"
            case .bodyPartFileSizeNotAvailable(let url):
                return "Could not fetch the file size from the provided URL: \(url)"
            case .inputStreamReadFailed(let error): return "InputStream read failed with error: \(error)"
            case .outputStreamFileAlreadyExists(let url): return "A file already exists at the provided URL: \(url)"
            case .outputStreamWriteFailed(let error): return "OutputStream write failed with error: \(error)"
            }
        }
    }

    enum Source {
        case data(Data)
        case file(URL)
        case stream(InputStream)
    }

    struct BodyPart {
        let headers: [(name: String, value: String)]
        let source: Source
        let length: UInt64
    }

    static let crlf = "\r\n"

    /// The `Content-Type` header value, including the boundary.
    open lazy var contentType: String = "multipart/form-data; boundary=\(boundary)"

    /// The content length of all body parts used to generate the `multipart/form-data` not including the boundaries.
    public var contentLength: UInt64 { bodyParts.reduce(0) { $0 + $1.length } }

    /// The boundary used to separate the body parts in the encoded form data.
    public let boundary: String

    let fileManager: FileManager
    private(set) var bodyParts: [BodyPart] = []
    private var bodyPartError: EncodingError?
    private let streamBufferSize = 1024

    /// Creates an encoder with the given file manager and boundary (random when nil).
    ///
    /// - Parameters:
    ///   - fileManager: The file manager used to inspect file parts.
    ///   - boundary: The boundary; nil for a random `alamofire.boundary.%08x%08x` one.
    public init(fileManager: FileManager = .default, boundary: String? = nil) {
        self.fileManager = fileManager
        self.boundary = boundary ?? RequestMultipartFormData.randomBoundary()
    }

    /// A random boundary: `alamofire.boundary.%08x%08x`.
    static func randomBoundary() -> String {
        let first = UInt32.random(in: UInt32.min...UInt32.max)
        let second = UInt32.random(in: UInt32.min...UInt32.max)
        return String(format: "alamofire.boundary.%08x%08x", first, second)
    }

    // MARK: Appending

    /// Appends in-memory data as a part.
    ///
    /// - Parameters:
    ///   - data: The part's content.
    ///   - name: The form field's name.
    ///   - fileName: The file name, if any.
    ///   - mimeType: The part's `Content-Type`, if any.
    public func append(_ data: Data, withName name: String, fileName: String? = nil, mimeType: String? = nil) {
        let headers = contentHeaders(withName: name, fileName: fileName, mimeType: mimeType)
        bodyParts.append(BodyPart(headers: headers, source: .data(data), length: UInt64(data.count)))
    }

    /// Appends a file part, taking the file name from the URL's last path component and the MIME type from its
    /// extension.
    ///
    /// - Parameters:
    ///   - fileURL: The file's URL.
    ///   - name: The form field's name.
    public func append(_ fileURL: URL, withName name: String) {
        let fileName = fileURL.lastPathComponent
        let pathExtension = fileURL.pathExtension
        guard !fileName.isEmpty, !pathExtension.isEmpty else {
            setBodyPartError(.bodyPartFilenameInvalid(in: fileURL))
            return
        }
        append(
            fileURL, withName: name, fileName: fileName,
            mimeType: RequestMultipartFormData.mimeType(forPathExtension: pathExtension))
    }

    /// Appends a file part with the given file name and MIME type.
    ///
    /// - Parameters:
    ///   - fileURL: The file's URL; the file is read when the body is encoded.
    ///   - name: The form field's name.
    ///   - fileName: The file name sent.
    ///   - mimeType: The part's `Content-Type`.
    public func append(_ fileURL: URL, withName name: String, fileName: String, mimeType: String) {
        let headers = contentHeaders(withName: name, fileName: fileName, mimeType: mimeType)
        guard fileURL.isFileURL else {
            setBodyPartError(.bodyPartURLInvalid(url: fileURL))
            return
        }
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: fileURL.path, isDirectory: &isDirectory) else {
            setBodyPartError(.bodyPartFileNotReachable(at: fileURL))
            return
        }
        guard !isDirectory.boolValue else {
            setBodyPartError(.bodyPartFileIsDirectory(at: fileURL))
            return
        }
        guard let size = (try? fileManager.attributesOfItem(atPath: fileURL.path))?[.size] as? NSNumber else {
            setBodyPartError(.bodyPartFileSizeNotAvailable(at: fileURL))
            return
        }
        bodyParts.append(BodyPart(headers: headers, source: .file(fileURL), length: size.uint64Value))
    }

    /// Appends a stream part of a known length.
    ///
    /// - Parameters:
    ///   - stream: The part's content, read when the body is encoded.
    ///   - length: The number of bytes the stream gives.
    ///   - name: The form field's name.
    ///   - fileName: The file name sent.
    ///   - mimeType: The part's `Content-Type`.
    public func append(
        _ stream: InputStream, withLength length: UInt64, name: String, fileName: String, mimeType: String
    ) {
        let headers = contentHeaders(withName: name, fileName: fileName, mimeType: mimeType)
        bodyParts.append(BodyPart(headers: headers, source: .stream(stream), length: length))
    }

    /// Appends a stream part with explicit headers.
    ///
    /// - Parameters:
    ///   - stream: The part's content, read when the body is encoded.
    ///   - length: The number of bytes the stream gives.
    ///   - headers: The part's headers, in order.
    public func append(_ stream: InputStream, withLength length: UInt64, headers: [(name: String, value: String)]) {
        bodyParts.append(BodyPart(headers: headers, source: .stream(stream), length: length))
    }

    // MARK: Encoding

    /// Encodes all appended parts into one `Data` value (file and stream parts are read fully).
    ///
    /// - Returns: The encoded body.
    /// - Throws: The first ``EncodingError`` met while appending, or one met while reading a part.
    public func encode() throws -> Data {
        if let bodyPartError { throw bodyPartError }
        var encoded = Data()
        for (index, part) in bodyParts.enumerated() {
            encoded.append(prefix(ofPartAt: index))
            switch part.source {
            case .data(let data):
                encoded.append(data)
            case .file(let url):
                do { encoded.append(try Data(contentsOf: url)) } catch {
                    throw EncodingError.inputStreamReadFailed(error: error)
                }
            case .stream(let stream):
                encoded.append(try RequestMultipartFormData.readAll(stream, bufferSize: streamBufferSize))
            }
        }
        if !bodyParts.isEmpty { encoded.append(Data(finalBoundary.utf8)) }
        return encoded
    }

    /// Writes the encoded form to `fileURL`, which must not exist yet.
    ///
    /// - Parameter fileURL: A file URL where no file is.
    /// - Throws: An ``EncodingError``.
    public func writeEncodedData(to fileURL: URL) throws {
        if let bodyPartError { throw bodyPartError }
        if fileManager.fileExists(atPath: fileURL.path) {
            throw EncodingError.outputStreamFileAlreadyExists(at: fileURL)
        }
        guard fileURL.isFileURL else { throw EncodingError.bodyPartURLInvalid(url: fileURL) }
        do { try encode().write(to: fileURL) } catch let error as EncodingError { throw error } catch {
            throw EncodingError.outputStreamWriteFailed(error: error)
        }
    }

    /// The total number of bytes `encode()` produces, boundaries and headers included.
    var encodedLength: UInt64 {
        var total: UInt64 = 0
        for index in bodyParts.indices {
            total += UInt64(prefix(ofPartAt: index).count) + bodyParts[index].length
        }
        if !bodyParts.isEmpty { total += UInt64(finalBoundary.utf8.count) }
        return total
    }

    /// A chunked stream of the encoded body, reading file and stream parts lazily, and its total length.
    func makeBodyStream(chunkSize: Int = 64 * 1024) throws -> (
        stream: AsyncThrowingStream<[UInt8], Error>, length: Int64
    ) {
        if let bodyPartError { throw bodyPartError }
        var segments: [MultipartBodyReader.Segment] = []
        for (index, part) in bodyParts.enumerated() {
            segments.append(.bytes(prefix(ofPartAt: index)))
            switch part.source {
            case .data(let data): segments.append(.bytes(data))
            case .file(let url): segments.append(.file(url))
            case .stream(let stream): segments.append(.stream(stream))
            }
        }
        if !bodyParts.isEmpty { segments.append(.bytes(Data(finalBoundary.utf8))) }
        let reader = MultipartBodyReader(segments: segments, chunkSize: max(chunkSize, 1))
        let stream = AsyncThrowingStream<[UInt8], Error>(unfolding: { try reader.next() })
        return (stream, Int64(encodedLength))
    }

    // MARK: Private

    private var initialBoundary: String { "--\(boundary)\(Self.crlf)" }
    private var encapsulatedBoundary: String { "\(Self.crlf)--\(boundary)\(Self.crlf)" }
    private var finalBoundary: String { "\(Self.crlf)--\(boundary)--\(Self.crlf)" }

    private func prefix(ofPartAt index: Int) -> Data {
        let boundaryString = index == 0 ? initialBoundary : encapsulatedBoundary
        let headerText = bodyParts[index].headers.map { "\($0.name): \($0.value)\(Self.crlf)" }.joined() + Self.crlf
        return Data((boundaryString + headerText).utf8)
    }

    private func contentHeaders(withName name: String, fileName: String? = nil, mimeType: String? = nil) -> [(
        name: String, value: String
    )] {
        var disposition = "form-data; name=\"\(name)\""
        if let fileName { disposition += "; filename=\"\(fileName)\"" }
        var headers: [(name: String, value: String)] = [("Content-Disposition", disposition)]
        if let mimeType { headers.append(("Content-Type", mimeType)) }
        return headers
    }

    private func setBodyPartError(_ error: EncodingError) {
        if bodyPartError == nil { bodyPartError = error }
    }

    static func readAll(_ stream: InputStream, bufferSize: Int) throws -> Data {
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: bufferSize)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: bufferSize)
            // `streamError` traps in swift-corelibs-foundation; a negative count is the failure signal.
            if count < 0 { throw EncodingError.inputStreamReadFailed(error: CocoaError(.fileReadUnknown)) }
            if count == 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }

    /// The MIME type for a file extension, `application/octet-stream` when unknown.
    static func mimeType(forPathExtension pathExtension: String) -> String {
        let types: [String: String] = [
            "txt": "text/plain", "text": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
            "csv": "text/csv", "xml": "application/xml", "json": "application/json", "js": "text/javascript",
            "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
            "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
            "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon", "bmp": "image/bmp", "tif": "image/tiff",
            "tiff": "image/tiff", "heic": "image/heic", "mp3": "audio/mpeg", "wav": "audio/wav", "m4a": "audio/mp4",
            "mp4": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "yaml": "application/yaml",
            "yml": "application/yaml", "md": "text/markdown", "rtf": "application/rtf", "wasm": "application/wasm"
        ]
        return types[pathExtension.lowercased()] ?? "application/octet-stream"
    }
}

/// Reads the segments of a multipart body in chunks, for a streamed upload.
final class MultipartBodyReader: @unchecked Sendable {
    enum Segment {
        case bytes(Data)
        case file(URL)
        case stream(InputStream)
    }

    private let lock = NSLock()
    private var segments: [Segment]
    private let chunkSize: Int
    private var openFile: FileHandle?
    private var openStream: InputStream?

    init(segments: [Segment], chunkSize: Int) {
        self.segments = segments.reversed()
        self.chunkSize = chunkSize
    }

    func next() throws -> [UInt8]? {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let file = openFile {
                let chunk: Data?
                do { chunk = try file.read(upToCount: chunkSize) } catch {
                    throw RequestMultipartFormData.EncodingError.inputStreamReadFailed(error: error)
                }
                if let chunk, !chunk.isEmpty { return [UInt8](chunk) }
                try? file.close()
                openFile = nil
                continue
            }
            if let stream = openStream {
                var buffer = [UInt8](repeating: 0, count: chunkSize)
                let count = stream.hasBytesAvailable ? stream.read(&buffer, maxLength: chunkSize) : 0
                if count < 0 {
                    stream.close()
                    openStream = nil
                    throw RequestMultipartFormData.EncodingError.inputStreamReadFailed(
                        error: CocoaError(.fileReadUnknown))
                }
                if count > 0 { return Array(buffer[0..<count]) }
                stream.close()
                openStream = nil
                continue
            }
            guard let segment = segments.popLast() else { return nil }
            switch segment {
            case .bytes(let data):
                if !data.isEmpty { return [UInt8](data) }
            case .file(let url):
                do { openFile = try FileHandle(forReadingFrom: url) } catch {
                    throw RequestMultipartFormData.EncodingError.inputStreamReadFailed(error: error)
                }
            case .stream(let stream):
                stream.open()
                openStream = stream
            }
        }
    }
}
