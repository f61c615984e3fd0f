import NetCore

#if canImport(Glibc)
import Glibc
#endif

/// A response's temporary file (see ``ResponseBuffering``): made without a name where the file system allows it
/// (`O_TMPFILE`), else made under ``namePrefix`` and unlinked at once, so that it is gone from the directory from the
/// start and its space comes back when the descriptor closes, whatever ends the process. Every call that touches the
/// disk runs on ``OffLoop``'s blocking pool, never on an event loop. The descriptor closes when the last reference
/// goes away.
final class TemporaryBufferFile: Sendable {
    /// What the gateway's temporary files are called for the instant between their making and their unlinking (and
    /// what the start-up sweep removes, should a crash fall in that instant).
    static let namePrefix = "moya-gateway-buffer-"

    private let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    deinit { close(fd) }

    /// Makes a temporary file in `directory`, off the loop.
    /// - Throws: ``SystemError`` with the system's reason (the file has no name to give).
    static func make(in directory: String) async throws -> TemporaryBufferFile {
        try await OffLoop.run { try makeNow(in: directory) }
    }

    /// Makes a temporary file in `directory` on the calling thread (start-up's check; never on a loop).
    static func makeNow(in directory: String) throws -> TemporaryBufferFile {
        // O_TMPFILE (`__O_TMPFILE | O_DIRECTORY`; Glibc's module does not export the macro).
        let unnamed = open(directory, 0o20000000 | O_DIRECTORY | O_RDWR | O_CLOEXEC, 0o600)
        if unnamed >= 0 { return TemporaryBufferFile(fd: unnamed) }
        // File systems without O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels): a name for an instant.
        let reason = errno
        guard reason == EOPNOTSUPP || reason == EISDIR || reason == EINVAL else {
            throw SystemError("cannot make a temporary file", errno: reason)
        }
        var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast())
        template.append(contentsOf: Array((namePrefix + "XXXXXX").utf8CString))
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw SystemError.last("cannot make a temporary file") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        return TemporaryBufferFile(fd: fd)
    }

    /// Writes all of `bytes` at `offset`, off the loop.
    /// - Throws: ``SystemError`` (a full disk: `ENOSPC`); what was written before is left and must not be read.
    func write(_ bytes: [UInt8], at offset: Int64) async throws {
        try await OffLoop.run { [fd] in
            try bytes.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let count = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
                    if count > 0 {
                        done += count
                    } else if count < 0 && errno == EINTR {
                        continue
                    } else {
                        throw count < 0 ? SystemError.last("write") : SystemError("write", errno: ENOSPC)
                    }
                }
            }
        }
    }

    /// Reads exactly `count` bytes at `offset` (written before), off the loop.
    func read(at offset: Int64, count: Int) async throws -> [UInt8] {
        guard count > 0 else { return [] }
        return try await OffLoop.run { [fd] in
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            try bytes.withUnsafeMutableBytes { raw in
                while done < count {
                    let got = pread(fd, raw.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                    if got > 0 {
                        done += got
                    } else if got < 0 && errno == EINTR {
                        continue
                    } else {
                        throw got < 0 ? SystemError.last("read") : SystemError("read: the file is shorter", errno: EIO)
                    }
                }
            }
            return bytes
        }
    }

    /// Gives the file's blocks back (the file is empty again), off the loop.
    func truncate() async {
        _ = try? await OffLoop.run { [fd] in ftruncate(fd, 0) }
    }

    /// Removes what a crash may have left in `directory`: files whose name begins with ``namePrefix`` (made and not
    /// yet unlinked when the process died). Returns how many it removed. Other files are left alone.
    static func sweep(_ directory: String) -> Int {
        guard let handle = opendir(directory) else { return 0 }
        defer { closedir(handle) }
        var removed = 0
        let directoryFD = dirfd(handle)
        while let entry = readdir(handle) {
            let name = Self.name(of: entry)
            guard name.hasPrefix(namePrefix) else { continue }
            var status = stat()
            guard fstatat(directoryFD, name, &status, AT_SYMLINK_NOFOLLOW) == 0, status.st_mode & S_IFMT == S_IFREG,
                status.st_uid == geteuid()
            else { continue }
            if unlinkat(directoryFD, name, 0) == 0 { removed += 1 }
        }
        return removed
    }

    /// The entry's name, read up to its terminating NUL in place. A record is only as long as its name
    /// (`d_reclen`): loading `d_name` as a value would read its declared 256 bytes, past the end of the last record
    /// of `readdir`'s buffer (a crash when that is the end of the mapping).
    private static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        guard let offset = MemoryLayout<dirent>.offset(of: \.d_name) else { return "" }
        return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
    }
}
