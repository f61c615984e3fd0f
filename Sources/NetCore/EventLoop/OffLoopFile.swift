#if canImport(Glibc)
import Glibc
#endif

/// A regular file opened for reading in ranges, every read done on ``OffLoop``'s blocking pool (never on a loop
/// thread). The descriptor stays open until the last reference goes away, so every range comes from the file that was
/// opened, whatever happens to its path meanwhile.
package final class OffLoopFile: Sendable {
    /// The file's size when it was opened.
    package let size: Int64
    private let fd: Int32

    private init(fd: Int32, size: Int64) {
        self.fd = fd
        self.size = size
    }

    deinit { close(fd) }

    /// Opens `path` for reading and takes its size, off the loop.
    /// - Throws: ``SystemError`` when it cannot be opened or is not a regular file.
    package static func open(_ path: String) async throws -> OffLoopFile {
        try await OffLoop.run {
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SystemError.last("open \(path)") }
            var status = stat()
            guard fstat(fd, &status) == 0 else {
                let error = SystemError.last("fstat \(path)")
                Glibc.close(fd)
                throw error
            }
            guard status.st_mode & S_IFMT == S_IFREG else {
                Glibc.close(fd)
                throw SystemError("open \(path): not a regular file", errno: EINVAL)
            }
            return OffLoopFile(fd: fd, size: Int64(status.st_size))
        }
    }

    /// Reads up to `maxCount` bytes at `offset` with one `pread`, off the loop. Empty at the end of the file; fewer
    /// than asked may come back before it (the next read goes on from there).
    package func read(at offset: Int64, maxCount: Int) async throws -> [UInt8] {
        guard maxCount > 0, offset >= 0 else { return [] }
        return try await OffLoop.run { [fd] in
            var bytes = [UInt8](repeating: 0, count: maxCount)
            var count = -1
            for _ in 0..<16 {
                count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
                if count >= 0 || errno != EINTR { break }
            }
            guard count >= 0 else { throw SystemError.last("read") }
            bytes.removeLast(maxCount - count)
            return bytes
        }
    }
}
