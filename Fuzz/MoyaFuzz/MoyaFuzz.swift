import FuzzTargets

#if canImport(Glibc)
import Glibc
#endif
#if MOYA_FUZZING
import CFuzzerDriver
#endif

/// The fuzz targets' executable (docs/fuzzing.md).
///
///     MoyaFuzz --list                       the targets, their -max_len and dictionary
///     MoyaFuzz TARGET [libFuzzer flags] [CORPUS_DIR|FILE]...
///
/// Built by `scripts/fuzz.sh` (`-sanitize=fuzzer,address -D MOYA_FUZZING`), the second form is libFuzzer's command line
/// for one target. Built normally (`swift build`), it runs each file given (directories: each file in them) through
/// the target once and reports a failed invariant with the file's name: the corpus as a regression replay. Flags
/// beginning with `-` are ignored then, so the same command works in both builds. The target can also be named by
/// `MOYA_FUZZ_TARGET` (libFuzzer's `-fork`/`-merge` runs start the executable again without the name).
@main
enum MoyaFuzz {
    static func main() {
        var arguments = CommandLine.arguments
        if arguments.count > 1, arguments[1] == "--list" || arguments[1] == "--help" || arguments[1] == "-h" {
            for target in FuzzTargets.all {
                print("\(target.name)\t\(target.maxLength)\t\(target.dictionary ?? "-")\t\(target.summary)")
            }
            return
        }
        let target: FuzzTarget
        if arguments.count > 1, let named = FuzzTargets.named(arguments[1]) {
            target = named
            arguments.remove(at: 1)
            setenv("MOYA_FUZZ_TARGET", named.name, 1)
        } else if let name = getenv("MOYA_FUZZ_TARGET").map({ String(cString: $0) }),
            let named = FuzzTargets.named(name)
        {
            target = named
        } else {
            printError("usage: MoyaFuzz --list | TARGET [libFuzzer flags] [CORPUS_DIR|FILE]...\n")
            printError("targets: \(FuzzTargets.all.map(\.name).joined(separator: ", "))\n")
            exit(2)
        }
        #if MOYA_FUZZING
        exit(runLibFuzzer(target, arguments: arguments))
        #else
        exit(replay(target, paths: arguments.dropFirst().filter { !$0.hasPrefix("-") }))
        #endif
    }

    /// Runs every file under `paths` through `target` once; 1 when an invariant failed.
    static func replay(_ target: FuzzTarget, paths: some Collection<String>) -> Int32 {
        var files: [String] = []
        for path in paths {
            files += filesUnder(path)
        }
        var failed = 0
        for file in files {
            guard let bytes = readFile(file) else {
                printError("\(file): cannot read\n")
                failed += 1
                continue
            }
            do {
                try target.run(bytes)
            } catch {
                printError("\(file): \(error)\n")
                failed += 1
            }
        }
        print("\(target.name): \(files.count) inputs, \(failed) failed")
        return failed == 0 ? 0 : 1
    }

    /// `path` itself, or the regular files directly in it when it is a directory (sorted).
    static func filesUnder(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            var info = stat()
            let full = path.hasSuffix("/") ? path + name : path + "/" + name
            if stat(full, &info) == 0, info.st_mode & 0o170000 == 0o100000 { names.append(full) }  // S_ISREG
        }
        return names.sorted()
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count > 0 { bytes += buffer[0..<count] }
            if count < buffer.count { break }
        }
        return ferror(file) == 0 ? bytes : nil
    }
}

/// Writes `text` to standard error, unbuffered (a crash right after must not lose it).
func printError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = write(2, base + offset, bytes.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}

#if MOYA_FUZZING
/// The target libFuzzer runs: C code calls it, so it is a global rather than something a closure captures. Set once,
/// before the driver starts; read-only afterwards.
nonisolated(unsafe) private var selectedTarget: FuzzTarget?

/// libFuzzer's entry point. `libclang_rt.fuzzer`'s own `main` refers to it, so it must exist; `MoyaFuzz.main` hands it
/// to `LLVMFuzzerRunDriver` (SwiftPM makes our `@main` the program's `main`).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selectedTarget else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data.map(UnsafeRawPointer.init), count: data == nil ? 0 : size)
    do {
        try target.run(bytes)
    } catch {
        // A violated invariant is a crash: libFuzzer saves the input and stops.
        printError("\(target.name): \(error)\n")
        abort()
    }
    return 0
}

extension MoyaFuzz {
    static func runLibFuzzer(_ target: FuzzTarget, arguments: [String]) -> Int32 {
        selectedTarget = target
        var argc = Int32(arguments.count)
        var pointers: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        return pointers.withUnsafeMutableBufferPointer { buffer in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
        }
    }
}
#endif
