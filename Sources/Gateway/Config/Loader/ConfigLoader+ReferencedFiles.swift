import Locking

/// The files a configuration load read or checked: the configuration file itself, `${file:...}` secret files, stub
/// `body_file`s, the TLS certificate and key, CA bundles. What `serve --watch` watches (see ``ConfigFileWatcher``).
package final class ReferencedFiles: Sendable {
    private let paths = Locked<Set<String>>([])

    package init() {}

    /// Every path noted so far, as the loader resolved it.
    package var all: Set<String> { paths.withLock { $0 } }

    func insert(_ path: String) {
        paths.withLock { _ = $0.insert(path) }
    }
}

extension ConfigLoader {
    /// This loader, noting in `files` every file it reads or checks (not `logging.output`, which the gateway writes
    /// rather than reads).
    package func recording(into files: ReferencedFiles) -> ConfigLoader {
        var loader = self
        let readFile = self.readFile
        let fileExists = self.fileExists
        let checkServerCertificate = self.checkServerCertificate
        let checkCABundle = self.checkCABundle
        loader.readFile = { path in
            files.insert(path)
            return readFile(path)
        }
        loader.fileExists = { path in
            files.insert(path)
            return fileExists(path)
        }
        loader.checkServerCertificate = { certificate, key in
            files.insert(certificate)
            files.insert(key)
            return checkServerCertificate(certificate, key)
        }
        loader.checkCABundle = { path in
            files.insert(path)
            return checkCABundle(path)
        }
        return loader
    }
}
