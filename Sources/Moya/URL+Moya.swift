import Foundation

extension URL {

    /// Initialize URL from Moya's `TargetType`: `baseURL` unchanged when `path` is empty (so a query on the base URL
    /// survives), otherwise `baseURL.appendingPathComponent(path)` (a `?` in `path` becomes `%3F`).
    ///
    /// - Parameter target: The target whose `baseURL` and `path` make the URL.
    public init<T: TargetType>(target: T) {
        // When a TargetType's path is empty, URL.appendingPathComponent may introduce trailing /, which may not be wanted in some cases
        // See: https://github.com/Moya/Moya/pull/1053
        // And: https://github.com/Moya/Moya/issues/1049
        let targetPath = target.path
        if targetPath.isEmpty {
            self = target.baseURL
        } else {
            self = target.baseURL.appendingPathComponent(targetPath)
        }
    }
}
