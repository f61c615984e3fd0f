import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Options for where a downloaded file is moved (Alamofire's `DownloadRequest.Options`).
public struct DownloadOptions: OptionSet, Sendable {
    /// The options' bits.
    public let rawValue: Int

    /// Creates options from their bits.
    ///
    /// - Parameter rawValue: The bits of the options.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Creates the destination's parent directories when they are missing.
    public static let createIntermediateDirectories = DownloadOptions(rawValue: 1 << 0)

    /// Removes a file already at the destination before moving the download there.
    public static let removePreviousFile = DownloadOptions(rawValue: 1 << 1)
}

/// Closure deciding where a finished download goes: gets the temporary file URL and the response, returns the
/// destination URL and options.
public typealias DownloadDestination = (_ temporaryURL: URL, _ response: HTTPURLResponse) -> (
    destinationURL: URL, options: DownloadOptions
)

/// Namespace mirroring Alamofire's `DownloadRequest` names used with Moya downloads.
public enum DownloadRequest {
    /// The options type of a `DownloadDestination`.
    public typealias Options = DownloadOptions
    /// A download destination closure.
    public typealias Destination = DownloadDestination

    /// A destination in `directory` named after the response URL's last path component (the temporary file's name
    /// when the response has no URL).
    ///
    /// - Parameters:
    ///   - directory: The search path directory of the destination; `.documentDirectory` by default.
    ///   - domain: The domain to look the directory up in; `.userDomainMask` by default (the temporary directory
    ///     when the directory has no URL there).
    ///   - options: How the file is moved there.
    /// - Returns: A ``DownloadDestination`` for `.downloadDestination(_:)` or `.downloadParameters(...)`.
    public static func suggestedDownloadDestination(
        for directory: FileManager.SearchPathDirectory = .documentDirectory,
        in domain: FileManager.SearchPathDomainMask = .userDomainMask,
        options: Options = []
    ) -> DownloadDestination {
        { temporaryURL, response in
            let directoryURLs = FileManager.default.urls(for: directory, in: domain)
            let fileName = response.url?.lastPathComponent ?? temporaryURL.lastPathComponent
            let base = directoryURLs.first ?? FileManager.default.temporaryDirectory
            return (base.appendingPathComponent(fileName), options)
        }
    }
}
