import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `server.buffering`: how proxied responses are buffered, as nginx's `proxy_buffering` does it. The upstream's answer
/// is read as fast as the upstream sends it, into memory and past that into a temporary file, so that the upstream
/// connection goes back to the pool as soon as the body has been read, whatever the client's pace; the client is fed
/// from the buffers. A route's `buffering: false`, a `text/event-stream` answer or one carrying `X-Accel-Buffering: no`
/// is relayed at the client's pace instead (and `X-Accel-Buffering: yes` buffers on any route, as in nginx).
package struct BufferingConfig: Sendable, Equatable {
    /// Bytes of one response held in memory for its client before the rest goes to a temporary file. Default 256 KiB.
    package var memory: Int = 256 * 1024
    /// The directory of the temporary files (resolved against the configuration file's directory). Default `/tmp`.
    package var tempDirectory: String = "/tmp"
    /// The largest temporary file of one response; past it, the rest of that response is relayed at the client's
    /// pace (nginx's `proxy_max_temp_file_size`, whose default this is). 0: no temporary files. Default 1 GiB.
    package var maxTempFileSize: Int64 = 1 << 30
    /// The most bytes in temporary files at once, all responses together; past it, the rest of a response that
    /// needs more is relayed at the client's pace, so that the disk cannot be filled. Default 1 GiB.
    package var maxTempTotal: Int64 = 1 << 30

    package init() {}

    /// The keys of `server.buffering`.
    static let keys = ["memory", "temp_dir", "max_temp_file_size", "max_temp_total"]

    /// Why temporary files cannot be made in `path` (not a directory, not writable, a read-only file system), or nil
    /// when they can. Nothing is created or changed.
    package static let tempDirectoryProblemOnDisk: @Sendable (String) -> String? = { path in
        var status = stat()
        guard stat(path, &status) == 0 else { return String(cString: strerror(errno)) }
        guard status.st_mode & S_IFMT == S_IFDIR else { return "not a directory" }
        guard access(path, W_OK | X_OK) == 0 else {
            return errno == EROFS ? "read-only file system" : "directory not writable"
        }
        return nil
    }
}

/// Parses the keys of issue #37's upstream side (`server.buffering`, `routes[].buffering`,
/// `upstreams.X.pool.max_share`), called from ``ConfigLoader``'s builder.
enum BufferingConfigParser {
    /// `server.buffering`: a mapping of ``BufferingConfig/keys``.
    static func buffering(
        _ entry: YAMLReader.Entry, reader: YAMLReader,
        tempDirectoryProblem: (String) -> String?
    ) -> BufferingConfig? {
        guard let map = reader.mapping(entry.value, entry.path, allowed: BufferingConfig.keys) else { return nil }
        var config = BufferingConfig()
        var ok = true
        if let item = map["memory"] {
            if let value = reader.size(item) {
                if value < 4096 || value > 256 << 20 {
                    reader.report(line: reader.line(of: item.value), item.path, "must be between 4KiB and 256MiB")
                    ok = false
                } else {
                    config.memory = Int(value)
                }
            } else {
                ok = false
            }
        }
        if let item = map["max_temp_file_size"] {
            if let value = reader.size(item, allowZero: true) { config.maxTempFileSize = value } else { ok = false }
        }
        if let item = map["max_temp_total"] {
            if let value = reader.size(item, allowZero: true) { config.maxTempTotal = value } else { ok = false }
        }
        if let item = map["temp_dir"], let value = reader.scalar(item.value, item.path) {
            if value.text.isEmpty {
                reader.report(line: value.line, item.path, "must not be empty")
                ok = false
            } else {
                let resolved = reader.resolve(value.text)
                if let problem = tempDirectoryProblem(resolved) {
                    reader.report(
                        line: value.line, item.path,
                        value.fromEnvironment ? problem : "\(problem): \(resolved)")
                    ok = false
                } else {
                    config.tempDirectory = resolved
                }
            }
        } else if !map.has("temp_dir") {
            // The default directory must do too: a start that would fail at the first long answer fails now.
            if let problem = tempDirectoryProblem(config.tempDirectory) {
                reader.report(
                    line: map.line, YAMLReader.join(entry.path, "temp_dir"),
                    "\(problem): \(config.tempDirectory) (the default; set server.buffering.temp_dir)")
                ok = false
            }
        }
        return ok ? config : nil
    }

    /// The default temporary directory, checked when the file has no `server.buffering` at all (reported at `server`,
    /// or at line 1 without it).
    static func checkDefaultTempDirectory(line: Int, reader: YAMLReader, tempDirectoryProblem: (String) -> String?) {
        let directory = BufferingConfig().tempDirectory
        if let problem = tempDirectoryProblem(directory) {
            reader.report(
                line: line, "server.buffering.temp_dir",
                "\(problem): \(directory) (the default; set server.buffering.temp_dir)")
        }
    }

    /// `upstreams.X.pool.max_share`: a fraction (`0.5`) or a percentage (`50%`) in (0, 1].
    static func maxShare(_ entry: YAMLReader.Entry, reader: YAMLReader) -> Double? {
        guard let value = reader.scalar(entry.value, entry.path) else { return nil }
        var text = value.text.trimmingSpaces()
        var scale = 1.0
        if text.hasSuffix("%") {
            text = String(text.dropLast()).trimmingSpaces()
            scale = 100
        }
        guard let number = Double(text), number.isFinite else {
            reader.report(
                line: value.line, entry.path,
                "expected a fraction or a percentage, got \(value.shown) (e.g. 0.5 or 50%)")
            return nil
        }
        let share = number / scale
        guard share > 0 && share <= 1 else {
            reader.report(line: value.line, entry.path, "must be more than 0 and at most 1 (100%)")
            return nil
        }
        return share
    }
}
